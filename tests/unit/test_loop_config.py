"""The loop's settings reach the consumers that act on them: the rollout draw's seed among them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from consumers.round_controller.handler import RoundConfig
from infra.cli.main import app
from infra.loop.config import LoopConfig

pytestmark = pytest.mark.unit


def test_the_seed_reaches_the_round_controller_in_process_and_in_its_own_process(monkeypatch):
    config = LoopConfig(seed=5)
    assert RoundConfig(**config.round_settings()).seed == 5
    for name, value in config.round_env().items():
        monkeypatch.setenv(name, value)
    assert RoundConfig().seed == 5  # a spawned `flywheel consume round_controller` reads FLYWHEEL_ROUND_SEED
    assert LoopConfig().round_settings()["seed"] == 0


def test_flywheel_run_takes_a_seed():
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--seed" in result.output
