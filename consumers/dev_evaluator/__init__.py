"""Dev evaluator: turns the verdicts of a dev-evaluation rollout group into DevSetEvaluated and promotes the better
version."""
