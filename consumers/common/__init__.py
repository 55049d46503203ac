"""What several consumers share: incremental indexes over the log, episode reconstruction, task lookup."""
