"""The bus port (publish, consume as a group, replay) and its adapters: Kafka and the embedded SQLite log."""
