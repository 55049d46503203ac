"""The action protocol between policy and harness: its text format and the parser that validates it."""
