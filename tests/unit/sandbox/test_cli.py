"""``flywheel sandbox stats`` and ``check`` as a user runs them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from infra.cli.sandbox import app

pytestmark = pytest.mark.unit


def test_stats_json() -> None:
    result = CliRunner().invoke(app, ["stats", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["apps"] >= 14 and data["tools"] >= 220
    assert set(data["tasks"]) == {"tool_use", "memory", "skills", "sub_agent"}
    assert all(set(splits) == {"train", "dev", "test"} for splits in data["tasks"].values())
    assert sum(n for splits in data["tasks"].values() for n in splits.values()) >= 600


def test_check_is_green() -> None:
    result = CliRunner().invoke(app, ["check"])
    assert result.exit_code == 0, result.output
    assert "reference passed" in result.output
