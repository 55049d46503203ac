"""Rides: fare estimates, requests that need pickup confirmation, tips and ratings."""

from producers.backends.sandbox.apps.rides.model import seed
from producers.backends.sandbox.apps.rides.tools import TOOLS

__all__ = ["TOOLS", "seed"]
