"""Calendar: events with attendees, invites, reminders and free-slot search."""

from producers.backends.sandbox.apps.calendar.model import seed
from producers.backends.sandbox.apps.calendar.tools import TOOLS

__all__ = ["TOOLS", "seed"]
