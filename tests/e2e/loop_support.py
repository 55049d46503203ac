"""A small loop (2 rounds, few rollouts, a short SFT) and the checks every end-to-end run must pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bus_schemas.events import DevSetEvaluated, ModelVersionRegistered, RoundCompleted, RoundStarted
from bus_schemas.topics import TOPICS
from consumers.registry import CONSUMERS
from infra.audit.replay import Scope, replay_verify
from infra.bootstrap import Ports, open_ports
from infra.config import StackSettings, load_settings
from infra.events import decodable
from infra.loop.config import LoopConfig
from learner.config import LearnerConfig

DETERMINISTIC = ("verifier", "curator", "diagnoser")
FIRST_ROLLOUTS = 32  # round 0: the reference solver's episodes, enough for min_admitted_for_training
DEV_PER_CATEGORY = 1  # dev and test tasks per category: the evaluation's plumbing, not a score
REPO = Path(__file__).resolve().parents[2]


def small_loop(tmp_path: Path) -> LoopConfig:
    base = LearnerConfig()
    learner = base.model_copy(
        update={
            # plumbing, not learning: a quarter of the default batch and half the action length keep each
            # training step and each decoded action cheap (an untrained model writes to the limit)
            "sft": base.sft.model_copy(update={"max_steps": 40, "batch_size": 4}),
            "continued_sft": base.continued_sft.model_copy(update={"max_steps": 10, "batch_size": 4}),
            "max_new_tokens": 48,
            "dev_per_category": DEV_PER_CATEGORY,
            "cold_start_seeds": 1,
            "work_dir": tmp_path / "learner",
        }
    )
    return LoopConfig(
        rounds=2,
        first_round_rollouts=FIRST_ROLLOUTS,
        rollouts_per_round=8,
        failure_retries=0,  # an untrained model fails nearly every rollout; test_loop_embedded retries them once
        rollout_workers=1,  # test_loop_embedded runs two
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
    models = sorted((e for e in events if isinstance(e, ModelVersionRegistered)), key=lambda e: e.round or 0)
    assert [m.round for m in models] == [0, 1]  # a missing round (None) fails here
    assert models[0].parent_version is None and models[1].parent_version == started[1].policy_version.split("/")[1]
    evaluations = [e for e in events if isinstance(e, DevSetEvaluated) and e.evaluates == "model" and e.split == "dev"]
    assert [e.round for e in sorted(evaluations, key=lambda e: e.round or 0)] == [0, 1]
    [test] = [e for e in events if isinstance(e, DevSetEvaluated) and e.split == "test"]  # once, at the end
    assert test.round == 1 and test.per_category["tool_use"].tasks == DEV_PER_CATEGORY
    assert all(e.per_category["tool_use"].tasks == DEV_PER_CATEGORY for e in evaluations)
    for model in models:
        version = ports.registry.resolve(f"planner/{model.model_version}")
        assert version.tags["dataset_digest"].startswith("sha256:") and version.tags["flywheel_run_id"] == run_id
        assert version.tags["parent_version"] == (model.parent_version or "")
        assert version.tags["harness_version"] and "dev_overall" in version.tags
        assert version.run_id is not None
        lineage = ports.registry.load_dict(version.run_id, "lineage.json")
        assert lineage["source_offsets"] and all(v >= 0 for v in lineage["source_offsets"].values())
    harness = ports.registry.resolve(
        started[0].harness_version.replace("/", "@production").split("@")[0] + "@production"
    )
    assert harness.name == started[0].harness_version.split("/")[0]
    assert not [e for e in decodable(ports.bus.replay("dead-letters"))]
    report = replay_verify(ports, {n: CONSUMERS[n] for n in DETERMINISTIC}, Scope())
    assert report.ok, (report.differences[:3], report.bad_blobs[:3])
    assert report.inputs["verifier"] >= FIRST_ROLLOUTS and report.blobs_checked > 0
    for name in ("report.json", "report.html", "dev.png", "cost.png", "curation.png"):
        assert (report_dir / name).stat().st_size > 0, name


def stack_urls(stack: StackSettings) -> dict[str, str]:
    """The real stack's Kafka, SeaweedFS and MLflow as ``flywheel run`` takes them (``--bus``, ``--blobs``, ...)."""
    return {
        "bus": f"kafka://{stack.host}:{stack.kafka_port}",
        "blobs": f"s3://flywheel-blobs?endpoint={stack.host}:{stack.s3_port}",
        "registry": stack.mlflow_url,
    }


def run_spawned_on_real_stack(
    stack: StackSettings, run_id: str, loop: LoopConfig, tmp_path: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``flywheel run --spawn-consumers`` (every consumer its own process) of ``loop`` on the real stack, its reports
    under ``tmp_path/runs/<run_id>``, with ``env`` added to this process's environment; fails with the tails of the
    run's logs unless the run exits 0."""
    config = tmp_path / "loop.json"
    config.write_text(loop.model_dump_json())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "infra.cli.main",
            "run",
            "--spawn-consumers",
            f"--config={config}",
            f"--run-id={run_id}",
            "--no-progress",
            *(f"--{k}={v}" for k, v in stack_urls(stack).items()),
        ],
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=1100,
    )
    logs = tmp_path / "runs" / run_id / "logs"
    tails = (
        "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-1500:]}" for p in sorted(logs.glob("*.log")))
        if logs.exists()
        else ""
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:] + tails
    return proc


def real_stack_ports(stack: StackSettings, run_id: str) -> Ports:
    """Ports on the real stack that see what run ``run_id`` wrote (its bus namespace)."""
    urls = stack_urls(stack)
    return open_ports(
        load_settings(bus=f"{urls['bus']}?namespace={run_id}", blobs=urls["blobs"], registry=urls["registry"])
    )
