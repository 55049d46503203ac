"""The human review gate: pending reviews are ReviewRequested events without a ReviewDecided after them."""
