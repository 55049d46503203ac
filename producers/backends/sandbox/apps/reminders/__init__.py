"""Reminders: to-dos with due dates, priorities and lists."""

from producers.backends.sandbox.apps.reminders.model import seed
from producers.backends.sandbox.apps.reminders.tools import TOOLS

__all__ = ["TOOLS", "seed"]
