"""Settings: radios, display and sound, do-not-disturb, and app permissions."""

from producers.backends.sandbox.apps.settings.model import seed
from producers.backends.sandbox.apps.settings.tools import TOOLS

__all__ = ["TOOLS", "seed"]
