"""A plugin whose dependency is missing: importing it fails, as a benchmark package without its wheel would."""

from __future__ import annotations

raise ImportError("No module named 'bfcl_eval' (test plugin)")
