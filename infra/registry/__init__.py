"""The registry port (runs, model and harness versions, aliases) and its MLflow adapter (server or SQLite file)."""
