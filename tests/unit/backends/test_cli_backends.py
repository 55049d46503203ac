"""``flywheel backends list``: what is installed, its trust, who provides it and whether a judge verifies it."""

from __future__ import annotations

from importlib import metadata

import pytest
from typer.testing import CliRunner

from infra.cli.main import app
from producers.backends import plugins

pytestmark = pytest.mark.unit

ECHO = metadata.EntryPoint(name="echo", value="plugin_echo:EchoBackend", group=plugins.BACKENDS)
BROKEN = metadata.EntryPoint(name="ext", value="plugin_broken:Backend", group=plugins.BACKENDS)


def test_flywheel_backends_list_shows_trust_provider_and_judge(install_plugins) -> None:
    install_plugins(ECHO)
    result = CliRunner().invoke(app, ["backends", "list"])
    assert result.exit_code == 0, result.output
    lines = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") > 2}
    assert {"sandbox", "llm_sim", "device", "echo"} <= set(lines)
    assert "exact" in lines["sandbox"] and "planner-flywheel" in lines["sandbox"] and "yes" in lines["sandbox"]
    assert "device" in lines["device"] and lines["device"].rstrip("│ ").endswith("no")
    assert "simulated" in lines["echo"] and "plugin_echo:EchoBackend" in lines["echo"]


def test_flywheel_backends_list_reports_a_broken_plugin_and_exits_1(install_plugins) -> None:
    install_plugins(BROKEN)
    result = CliRunner().invoke(app, ["backends", "list", "--json"])
    assert result.exit_code == 1
    assert '"name": "sandbox", "trust": "exact"' in result.output
    assert "No module named 'bfcl_eval'" in result.output


def test_flywheel_backends_help_explains_the_entry_point_groups() -> None:
    result = CliRunner().invoke(app, ["backends", "--help"])
    assert result.exit_code == 0
    assert all(group in result.output.replace("\n", "") for group in ("planner_flywheel.backends", "judges"))
