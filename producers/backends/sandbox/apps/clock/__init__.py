"""Clock: alarms, timers, world clocks and the current time."""

from producers.backends.sandbox.apps.clock.model import seed
from producers.backends.sandbox.apps.clock.tools import TOOLS

__all__ = ["TOOLS", "seed"]
