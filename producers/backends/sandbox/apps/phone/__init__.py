"""Phone: call history, placing calls, voicemail."""

from producers.backends.sandbox.apps.phone.model import seed
from producers.backends.sandbox.apps.phone.tools import TOOLS

__all__ = ["TOOLS", "seed"]
