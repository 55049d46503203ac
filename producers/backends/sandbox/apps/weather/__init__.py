"""Weather: current conditions, forecasts, alerts and saved cities (read-mostly, seeded per world)."""

from producers.backends.sandbox.apps.weather.model import seed
from producers.backends.sandbox.apps.weather.tools import TOOLS

__all__ = ["TOOLS", "seed"]
