"""The learner's jobs on the embedded ports: seed -> SFT -> registered @candidate -> dev eval -> @production."""

from __future__ import annotations

from pathlib import Path

import pytest

from bus_schemas.events.training import (
    DevSetEvaluated,
    ModelVersionRegistered,
    RewardScheduleSelected,
    TrainingRunStarted,
)
from bus_schemas.topics import TOPIC_MODELS
from infra.events import from_record
from learner.config import LearnerConfig
from learner.dataset.episodes import LEARNER_TOPICS
from learner.jobs import run_eval, run_rl, run_sft, seed_reference_episodes
from learner.model import PlannerPolicy
from learner.registry import CANDIDATE, PRODUCTION, ProductionPolicy
from learner.rl.services import LocalServices
from learner.sft import SftSettings

pytestmark = pytest.mark.unit


def test_a_trained_model_is_registered_with_lineage_evaluated_promoted_and_served(
    embedded_ports, tmp_path: Path
) -> None:
    ports = embedded_ports
    config = LearnerConfig(
        cold_start_seeds=1,
        train_categories=("tool_use",),
        max_difficulty=1,  # a small pool: 4 templates x 18
        sft=SftSettings(max_steps=3, batch_size=4),
        dev_per_category=1,
        work_dir=tmp_path / "work",
    )
    with pytest.raises(ValueError, match="seed the cold start first"):
        run_sft(ports, config, run_id="run-jobs")
    assert seed_reference_episodes(ports, config, run_id="run-jobs") == 72
    trained = run_sft(ports, config, run_id="run-jobs")
    ref = ports.registry.resolve(f"planner@{CANDIDATE}")
    assert ref.version == trained.model_version and ref.tags["dataset_digest"] == trained.dataset_digest
    run = ports.registry.get_run(ref.run_id or "")
    assert run.params["harness_version"].startswith("tiny-planner@sha256:") and run.params["max_steps"] == "3"
    (dataset,) = ports.registry.datasets(ref.run_id or "")  # the examples' export is the dataset input's source file
    assert dataset.source["artifact_path"].endswith("/train.parquet")
    assert dataset.profile["num_rows"] == dataset.profile["examples"] > 0

    report, promoted = run_eval(ports, config, trained.model_version, run_id="run-jobs")
    assert promoted and ports.registry.resolve(f"planner@{PRODUCTION}").version == trained.model_version
    assert sum(s.tasks for s in report.evaluated.per_category.values()) == 4

    models = [from_record(r) for r in ports.bus.replay(TOPIC_MODELS)]
    started = next(e for e in models if isinstance(e, TrainingRunStarted))
    assert started.dataset.sha256 == trained.dataset_digest.removeprefix("sha256:")
    assert {k.split("/")[0] for k in started.source_offsets} == set(LEARNER_TOPICS)
    assert sum(v for k, v in started.source_offsets.items() if k.startswith("episodes/")) > 0
    assert any(isinstance(e, ModelVersionRegistered) and e.model_version == trained.model_version for e in models)
    assert any(isinstance(e, DevSetEvaluated) and e.model_version == trained.model_version for e in models)

    services = LocalServices(ports, tmp_path / "services")  # the rollout worker and verifier RL's rollouts go through
    try:
        tuned, reports = run_rl(
            ports, config, trained.model_version, steps=1, run_id="run-jobs", round=1, pump=services.pump
        )
    finally:
        services.close()
    assert reports[0].episodes == config.rl.tasks_per_step * config.rl.group_size
    tuned_ref = ports.registry.resolve(f"planner/{tuned.model_version}")
    assert tuned_ref.tags["parent_version"] == trained.model_version
    logged = ports.registry.get_run(tuned_ref.run_id or "").metrics  # per GRPO step, for trackers
    assert {"rl_reward_std", "rl_kl", "rl_clip_fraction", "rl_care_penalty", "rl_care_schedule"} <= set(logged)
    chosen = [from_record(r) for r in ports.bus.replay(TOPIC_MODELS)]
    choice = next(e for e in chosen if isinstance(e, RewardScheduleSelected))
    assert choice.previous == "partial_credit" and "train_success" in choice.inputs and choice.round == 1

    served = ProductionPolicy(
        ports.registry, "planner", tmp_path / "serve", lambda d, v: PlannerPolicy.from_dir(d, name=v)
    )
    assert served.refresh() and served.policy.name == f"planner/{trained.model_version}"


def _small(tmp_path: Path, **updates: object) -> LearnerConfig:
    """The 4 difficulty-1 tool_use templates x 18 instances, 2 SFT steps."""
    base = LearnerConfig(
        cold_start_seeds=1,
        train_categories=("tool_use",),
        max_difficulty=1,
        sft=SftSettings(max_steps=2, batch_size=4),
        work_dir=tmp_path / "w",
    )
    return base.model_copy(update=updates)


def test_continued_sft_keeps_the_base_tokenizer_and_window_and_records_its_parent(
    embedded_ports, tmp_path: Path
) -> None:
    from learner.model import PromptWindow
    from learner.model.factory import load_checkpoint

    ports = embedded_ports
    config = _small(tmp_path)
    seed_reference_episodes(ports, config, run_id="run-cont")
    base = run_sft(ports, config, run_id="run-cont")
    # a config with another vocabulary and window: the continued run must keep the base version's
    other = config.model_copy(
        update={
            "vocab_size": 700,
            "max_prompt_tokens": 100,
            "goal_tokens": 10,
            "system_tokens": 20,
            "max_new_tokens": 64,
            "copy_bias": 1.5,
        }
    )
    continued = run_sft(ports, other, run_id="run-cont", round=1, base_version=base.model_version, max_steps=3)
    ref = ports.registry.resolve(f"planner/{continued.model_version}")
    assert ref.tags["parent_version"] == base.model_version
    run = ports.registry.get_run(ref.run_id or "")
    assert run.params["max_steps"] == "3" and run.params["parent_version"] == base.model_version
    assert (
        PromptWindow.load(continued.checkpoint)
        == PromptWindow.load(base.checkpoint)
        != PromptWindow(100, 64, 10, 20, 1.5, value_slots=True, word_slots=True)
    )
    (_, base_tokenizer), (_, tokenizer) = load_checkpoint(base.checkpoint), load_checkpoint(continued.checkpoint)
    assert tokenizer.get_vocab() == base_tokenizer.get_vocab() and len(tokenizer) != 700
    fresh = run_sft(ports, other, run_id="run-cont", round=2, time_budget_s=0.0)
    assert fresh.metrics["train_steps"] == 1.0  # the deadline stops after the first step
    assert PromptWindow.load(fresh.checkpoint) == PromptWindow(
        100, 64, 10, 20, 1.5, constrained_actions=True, value_slots=True, word_slots=True
    )


def test_a_continued_run_merged_with_its_parent_saves_the_midpoint_and_records_the_weight(
    embedded_ports, tmp_path: Path
) -> None:
    """The same continued run (same data, seed and steps) with and without ``parent_merge``: merged, each weight of
    the checkpoint is the given share of the parent's plus the rest of the unmerged run's."""
    import torch

    from learner.model.factory import load_checkpoint

    ports = embedded_ports
    config = _small(tmp_path, continued_sft=SftSettings(max_steps=3, batch_size=4, learning_rate=1e-2))
    seed_reference_episodes(ports, config, run_id="run-merge")
    base = run_sft(ports, config, run_id="run-merge")
    plain = run_sft(ports, config, run_id="run-merge", round=1, base_version=base.model_version)
    merged_config = config.model_copy(update={"parent_merge": 0.5})
    merged = run_sft(ports, merged_config, run_id="run-merge", round=2, base_version=base.model_version)
    weights = {
        name: load_checkpoint(out.checkpoint)[0].state_dict()
        for name, out in (("base", base), ("plain", plain), ("merged", merged))
    }
    moved = [k for k, v in weights["plain"].items() if v.is_floating_point() and not torch.equal(v, weights["base"][k])]
    assert moved  # the continued run changed the model, so the merge has something to do
    for name in moved:
        assert torch.allclose(weights["merged"][name], (weights["base"][name] + weights["plain"][name]) / 2, atol=1e-6)
    run = ports.registry.get_run(ports.registry.resolve(f"planner/{merged.model_version}").run_id or "")
    assert run.params["parent_merge"] == "0.5"
    plain_run = ports.registry.get_run(ports.registry.resolve(f"planner/{plain.model_version}").run_id or "")
    assert "parent_merge" not in plain_run.params
