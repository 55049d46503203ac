"""The user's persistent memory: an SQLite FTS5 store with BM25 search, seeding and consolidation."""
