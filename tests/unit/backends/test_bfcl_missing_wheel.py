"""Without the bfcl-eval wheel the bfcl plugin fails to load, saying how to install it; the others are unaffected."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

from producers.backends import plugins

pytestmark = pytest.mark.unit


def test_the_plugin_names_the_missing_wheel_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "bfcl_eval" else find_spec(name, *a)
    )
    for module in [m for m in sys.modules if m.startswith("producers.backends.bfcl")]:
        monkeypatch.delitem(sys.modules, module)
    plugins.reset()
    try:
        with pytest.raises(plugins.PluginError, match=r"plugin 'bfcl' failed to load .*bfcl_eval.*make install"):
            plugins.make_backend("bfcl")
        assert plugins.make_backend("sandbox").name == "sandbox"
    finally:
        plugins.reset()
