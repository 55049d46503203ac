"""Maps: places (including contacts' homes), directions, saved places and ETA sharing."""

from producers.backends.sandbox.apps.maps.model import seed
from producers.backends.sandbox.apps.maps.tools import TOOLS

__all__ = ["TOOLS", "seed"]
