"""Food delivery: restaurants, menus, a cart and confirmed checkout."""

from producers.backends.sandbox.apps.food.model import seed
from producers.backends.sandbox.apps.food.tools import TOOLS

__all__ = ["TOOLS", "seed"]
