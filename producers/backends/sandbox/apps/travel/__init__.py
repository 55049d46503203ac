"""Travel: flights and hotels in the pool's cities, bookings with confirmation, check-in."""

from producers.backends.sandbox.apps.travel.model import seed
from producers.backends.sandbox.apps.travel.tools import TOOLS

__all__ = ["TOOLS", "seed"]
