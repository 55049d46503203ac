"""Notes: titled notes in folders, with tags and pins."""

from producers.backends.sandbox.apps.notes.model import seed
from producers.backends.sandbox.apps.notes.tools import TOOLS

__all__ = ["TOOLS", "seed"]
