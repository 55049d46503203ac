"""Shopping: a product catalogue, cart, confirmed checkout, returns and a wishlist."""

from producers.backends.sandbox.apps.shopping.model import seed
from producers.backends.sandbox.apps.shopping.tools import TOOLS

__all__ = ["TOOLS", "seed"]
