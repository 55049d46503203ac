"""Sandbox task suites: templates x seeded worlds, reference solvers (for solvability only) and an episode runner."""

from producers.tasks.solver import reference_solver
from producers.tasks.suite import build_task_suite

__all__ = ["build_task_suite", "reference_solver"]
