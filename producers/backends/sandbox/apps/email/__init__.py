"""Email: inbox, folders and drafts."""

from producers.backends.sandbox.apps.email.model import seed
from producers.backends.sandbox.apps.email.tools import TOOLS

__all__ = ["TOOLS", "seed"]
