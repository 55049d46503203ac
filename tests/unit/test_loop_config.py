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


def test_flywheel_run_takes_a_seed_and_the_retries():
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--seed" in result.output and "--retries" in result.output


def test_the_failure_retries_reach_the_round_controller_in_process_and_in_its_own_process(monkeypatch):
    config = LoopConfig(failure_retries=3, retry_temperature=0.6)
    assert (RoundConfig(**config.round_settings()).failure_retries, RoundConfig().failure_retries) == (3, 0)
    for name, value in config.round_env().items():
        monkeypatch.setenv(name, value)
    assert (RoundConfig().failure_retries, RoundConfig().retry_temperature) == (3, 0.6)
    assert LoopConfig().round_settings()["failure_retries"] == 2  # the main job retries; a bare consumer does not


def test_rl_runs_grpo_alone_and_mixed_runs_continued_sft_before_it():
    """The two differ only here: the round controller asks both for ``rl`` training, the trainer of ``mixed`` runs
    the continued-SFT steps first (the e2e runs use ``mixed``; test_learner_jobs.py runs GRPO without them)."""
    rl, mixed = LoopConfig(algorithm="rl"), LoopConfig(algorithm="mixed")
    assert rl.round_settings()["algorithm"] == mixed.round_settings()["algorithm"] == "rl"
    assert RoundConfig(**rl.round_settings()).algorithm == "rl"
    assert rl.trainer_learner().rl.sft_steps == 0
    assert mixed.trainer_learner().rl.sft_steps == mixed.learner.continued_sft.max_steps > 0
    assert LoopConfig().round_settings()["algorithm"] == "sft" and LoopConfig().trainer_learner().rl.sft_steps == 0


def test_a_config_file_is_laid_over_the_profile_field_by_field(tmp_path):
    """Setting one nested learner field keeps the profile's other learner settings (its cold-start steps and
    self weight 8), not the bare LearnerConfig defaults; a mistyped nested key is still refused by name."""
    from infra.cli.errors import CliError
    from infra.cli.run import _loop_config
    from infra.loop.config import profile

    path = tmp_path / "loop.json"
    path.write_text('{"rounds": 2, "learner": {"tiny": {"copy_head": true}, "continued_sft": {"max_steps": 50}}}')
    base = profile("quick")
    config = _loop_config(path, base)
    assert config.rounds == 2 and config.learner.tiny.copy_head and config.learner.continued_sft.max_steps == 50
    assert config.learner.sft == base.learner.sft and config.learner.self_weight == base.learner.self_weight == 8.0
    assert config.learner.tiny.hidden_size == base.learner.tiny.hidden_size
    assert config.learner.continued_sft.learning_rate == base.learner.continued_sft.learning_rate
    assert config.learner.harness == base.learner.harness
    path.write_text('{"learner": {"tiny": {"copy_heads": true}}}')
    with pytest.raises(CliError, match=r"learner\.tiny\.copy_heads"):
        _loop_config(path, base)
    path.write_text("[1, 2]")
    with pytest.raises(CliError, match="not a JSON object"):
        _loop_config(path, base)


def test_the_rollout_workers_reach_both_ways_of_running_the_consumers(tmp_path):
    """In process the loop runs worker 0 and starts the others itself (``PeerRolloutWorkers``); spawned, the
    rollout worker's command asks for as many processes; ``flywheel run --rollout-workers`` sets it."""
    from infra.loop.spawned import consume_command

    assert LoopConfig().rollout_workers == 2
    assert consume_command("rollout-worker", tmp_path, [], LoopConfig(rollout_workers=3))[-1] == "--workers=3"
    assert not any(a.startswith("--workers") for a in consume_command("verifier", tmp_path, [], LoopConfig()))
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--rollout-workers" in result.output
