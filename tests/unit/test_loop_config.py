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


def test_rl_runs_grpo_alone_and_mixed_runs_continued_sft_before_it():
    """The two differ only here: the round controller asks both for ``rl`` training, the trainer of ``mixed`` runs
    the continued-SFT steps first (the e2e runs use ``mixed``; test_learner_jobs.py runs GRPO without them)."""
    rl, mixed = LoopConfig(algorithm="rl"), LoopConfig(algorithm="mixed")
    assert rl.round_settings()["algorithm"] == mixed.round_settings()["algorithm"] == "rl"
    assert RoundConfig(**rl.round_settings()).algorithm == "rl"
    assert rl.trainer_learner().rl.sft_steps == 0
    assert mixed.trainer_learner().rl.sft_steps == mixed.learner.continued_sft.max_steps > 0
    assert LoopConfig().round_settings()["algorithm"] == "sft" and LoopConfig().trainer_learner().rl.sft_steps == 0
