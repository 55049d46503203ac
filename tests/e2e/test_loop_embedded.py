"""The main job end to end on the embedded default, every consumer in-process, two rounds, replay verifies.

It runs ``--algorithm mixed``, which covers the default's path too: round 0 trains with SFT on the reference
episodes and round 1 with continued SFT on what was admitted, exactly as ``flywheel run`` does by default; then
round 1's GRPO sends its groups through the in-process rollout worker and verifier. ``--algorithm rl`` differs from
``mixed`` only in the trainer's continued-SFT steps before GRPO (none): tests/unit/test_loop_config.py checks that
setting, test_learner_jobs.py runs GRPO from a registered version without them."""

from __future__ import annotations

import json

import pytest
from loop_support import DEV_PER_CATEGORY, check_run, run_events
from rl_support import GROUP, RL_STEPS, TASKS_PER_STEP, check_rl, small_mixed_loop

from bus_schemas.events import (
    EpisodeVerified,
    RolloutRequested,
    TrainingRequested,
    retried_episode,
    retry_episode_id,
)
from consumers.dev_evaluator.handler import kind_of
from infra.bootstrap import open_ports
from infra.config import load_settings
from infra.loop.run import run_loop

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_two_rounds_in_process_on_the_embedded_adapters(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_id = "e2e-mixed-embedded"
    settings = load_settings(
        bus=f"sqlite:///{tmp_path}/bus.db",
        blobs=f"file:///{tmp_path}/blobs",
        registry=f"sqlite:///{tmp_path}/mlflow.db",
    )
    loop = small_mixed_loop(tmp_path).model_copy(  # bfcl: an installed plugin; rollout worker 1 a process
        update={"external_suites": ("bfcl",), "failure_retries": 1, "rollout_workers": 2}
    )
    result = run_loop(settings, loop, run_id=run_id, show_progress=False)
    assert result.bus_url.endswith(f"?namespace={run_id}") and result.dead_letters == 0
    assert [r.round for r in result.rounds] == [0, 1] and all(r.dev is not None for r in result.rounds)
    assert result.rounds[1].rl_steps == RL_STEPS and result.rounds[1].rl_episodes == RL_STEPS * TASKS_PER_STEP * GROUP
    report = json.loads((tmp_path / "runs" / run_id / "report.json").read_text())
    assert [r["dev_overall"] for r in report["rounds"]] == [r.dev.overall for r in result.rounds]
    assert all(r["stage_seconds"].get("training", 0) > 0 for r in report["rounds"])
    # BFCL's dev tasks ran through the in-process rollout worker and its judge, scored apart from Overall
    assert all(set(r["dev_external"]) == {"bfcl"} for r in report["rounds"])
    assert all(r.dev.external["bfcl"].tasks == DEV_PER_CATEGORY for r in result.rounds if r.dev is not None)
    ports = open_ports(settings.model_copy(update={"bus": result.bus_url}))
    try:
        check_run(ports, run_id, tmp_path / "runs" / run_id)
        check_rl(ports, run_id, tmp_path / "runs" / run_id)
        check_retries(ports, run_id, report)
    finally:
        ports.close()
    check_workers(tmp_path / "runs" / run_id / "state")


def check_workers(state_dir) -> None:  # noqa: ANN001
    """Both rollout workers ran episodes: the loop's own and the process beside it (each one's pool snapshot counts
    the sandboxes it leased, one per episode)."""
    leases = {
        p.stem.removeprefix("pool-"): sum(k["leases"] for k in json.loads(p.read_text())["kinds"])
        for p in state_dir.glob("pool-*.json")
    }
    assert set(leases) == {"rollout-worker-0", "rollout-worker-1"} and min(leases.values()) > 0, leases


def check_retries(ports, run_id: str, report: dict) -> None:  # noqa: ANN001
    """Round 1's model retried each planned rollout it failed once, sampled, before the round trained; round 0's
    reference solver was never retried; the report counts the retries apart from the planned rollouts."""
    events = run_events(ports, run_id)
    planned = {
        e.episode_id
        for e in events
        if isinstance(e, RolloutRequested) and e.producer.service == "round_controller" and e.group_id is not None
    }
    planned -= {e.episode_id for e in events if isinstance(e, RolloutRequested) and kind_of(e.group_id)}
    verdicts = {e.episode_id: e for e in events if isinstance(e, EpisodeVerified)}
    failed = {p for p in planned if p in verdicts and verdicts[p].outcome == "failure"}
    retries = [e for e in events if isinstance(e, RolloutRequested) and retried_episode(e.episode_id)]
    assert failed and {r.episode_id for r in retries} == {retry_episode_id(f) for f in failed}
    assert all((r.round, r.group_size, r.temperature) == (1, 1, 0.8) for r in retries)
    ran = [verdicts[r.episode_id] for r in retries if r.episode_id in verdicts]
    assert len(ran) == len(retries)
    [trained] = [e for e in events if isinstance(e, TrainingRequested) and e.round == 1]
    assert max(v.occurred_at for v in ran) <= trained.occurred_at
    assert report["rounds"][1]["retry_episodes"] == len(ran) and report["rounds"][0]["retry_episodes"] == 0
    assert report["rounds"][1]["retry_solved"] == sum(v.outcome == "success" for v in ran)


def test_the_in_process_loop_leaves_the_environment_alone(tmp_path):
    import os

    from infra.loop.config import LoopConfig
    from infra.loop.inprocess import consumer_specs

    before = dict(os.environ)
    specs = consumer_specs(LoopConfig(auto_approve=("set_budgets",)))
    assert "harness_reviser" in [s.name for s in specs] and dict(os.environ) == before
