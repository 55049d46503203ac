"""Messages: SMS threads with contacts."""

from producers.backends.sandbox.apps.messages.model import seed
from producers.backends.sandbox.apps.messages.tools import TOOLS

__all__ = ["TOOLS", "seed"]
