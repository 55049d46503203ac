"""Music: a track library, playlists, likes and a player."""

from producers.backends.sandbox.apps.music.model import seed
from producers.backends.sandbox.apps.music.tools import TOOLS

__all__ = ["TOOLS", "seed"]
