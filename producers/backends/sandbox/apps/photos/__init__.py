"""Photos and files: the gallery, albums, sharing with contacts, and documents."""

from producers.backends.sandbox.apps.photos.model import seed
from producers.backends.sandbox.apps.photos.tools import TOOLS

__all__ = ["TOOLS", "seed"]
