"""The harness reviser: turns a round's failure clusters and dev scores into harness revisions, gated and published."""
