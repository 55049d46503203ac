"""A small loop (2 rounds, few rollouts, a short SFT) and the checks every end-to-end run must pass."""

from __future__ import annotations

from pathlib import Path

from bus_schemas.events import DevSetEvaluated, ModelVersionRegistered, RoundCompleted, RoundStarted
from bus_schemas.topics import TOPICS
from consumers.registry import CONSUMERS
from infra.audit.replay import Scope, replay_verify
from infra.bootstrap import Ports
from infra.events import decodable
from infra.loop.config import LoopConfig
from learner.config import LearnerConfig

DETERMINISTIC = ("verifier", "curator", "diagnoser")


def small_loop(tmp_path: Path) -> LoopConfig:
    base = LearnerConfig()
    learner = base.model_copy(
        update={
            "sft": base.sft.model_copy(update={"max_steps": 40}),
            "continued_sft": base.continued_sft.model_copy(update={"max_steps": 10}),
            "dev_per_category": 2,
            "cold_start_seeds": 1,
            "work_dir": tmp_path / "learner",
        }
    )
    return LoopConfig(
        rounds=2,
        first_round_rollouts=48,
        rollouts_per_round=8,
        min_admitted_for_training=8,
        learner=learner,
        out_dir=tmp_path / "runs",
        stall_timeout_s=300,
        auto_approve=(
            "add_instruction",
            "edit_instruction",
            "add_skill",
            "edit_skill",
            "set_memory_policy",
            "set_budgets",
        ),
    )


def run_events(ports: Ports, run_id: str) -> list:
    return [e for topic in TOPICS for e in decodable(ports.bus.replay(topic)) if e.run_id == run_id]


def check_run(ports: Ports, run_id: str, report_dir: Path) -> None:
    """Two rounds completed with a trained, evaluated, registered model each; lineage in
    the registry; replay verifies."""
    events = run_events(ports, run_id)
    completed = sorted((e for e in events if isinstance(e, RoundCompleted)), key=lambda e: e.round)
    assert [e.round for e in completed] == [0, 1]
    started = sorted((e for e in events if isinstance(e, RoundStarted)), key=lambda e: e.round)
    assert started[0].policy_version == "scripted:reference" and started[1].policy_version.startswith("planner/")
    models = sorted((e for e in events if isinstance(e, ModelVersionRegistered)), key=lambda e: e.round)
    assert [m.round for m in models] == [0, 1]
    assert models[0].parent_version is None and models[1].parent_version == started[1].policy_version.split("/")[1]
    evaluations = [e for e in events if isinstance(e, DevSetEvaluated) and e.evaluates == "model" and e.split == "dev"]
    assert sorted(e.round for e in evaluations) == [0, 1]
    [test] = [e for e in events if isinstance(e, DevSetEvaluated) and e.split == "test"]  # once, at the end
    assert test.round == 1 and test.per_category["tool_use"].tasks == 2
    assert all(e.per_category["tool_use"].tasks == 2 for e in evaluations)
    for model in models:
        version = ports.registry.resolve(f"planner/{model.model_version}")
        assert version.tags["dataset_digest"].startswith("sha256:") and version.tags["flywheel_run_id"] == run_id
        assert version.tags["parent_version"] == (model.parent_version or "")
        assert version.tags["harness_version"] and "dev_overall" in version.tags
        lineage = ports.registry.load_dict(version.run_id, "lineage.json")
        assert lineage["source_offsets"] and all(v >= 0 for v in lineage["source_offsets"].values())
    harness = ports.registry.resolve(
        started[0].harness_version.replace("/", "@production").split("@")[0] + "@production"
    )
    assert harness.name == started[0].harness_version.split("/")[0]
    assert not [e for e in decodable(ports.bus.replay("dead-letters"))]
    report = replay_verify(ports, {n: CONSUMERS[n] for n in DETERMINISTIC}, Scope())
    assert report.ok, (report.differences[:3], report.bad_blobs[:3])
    assert report.inputs["verifier"] >= 48 and report.blobs_checked > 0
    for name in ("report.json", "report.html", "dev.png", "cost.png", "curation.png"):
        assert (report_dir / name).stat().st_size > 0, name
