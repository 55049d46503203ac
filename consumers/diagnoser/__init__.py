"""The failure diagnoser: attributes each failed episode to one label of the failure taxonomy."""
