"""Dev-set evaluation: the held-out split through the harness in the sandbox, scored per capability."""

from learner.eval.dev import DevReport, evaluate_dev, pick_tasks

__all__ = ["DevReport", "evaluate_dev", "pick_tasks"]
