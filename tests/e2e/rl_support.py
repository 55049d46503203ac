"""A small loop that trains with GRPO through the bus (``rl``) or continued SFT then GRPO
(``mixed``), and its checks."""

from __future__ import annotations

import json
from pathlib import Path

from loop_support import check_run, run_events, small_loop

from bus_schemas.events import (
    ActionRejected,
    ActionTaken,
    EpisodeStarted,
    EpisodeVerified,
    RewardScheduleSelected,
    RolloutRequested,
    TrainingRunCompleted,
)
from infra.bootstrap import Ports, open_ports
from infra.config import load_settings
from infra.loop.config import LoopConfig
from infra.loop.run import LoopResult, run_loop

RL_STEPS, GROUP, TASKS_PER_STEP = 2, 2, 2


def small_rl_loop(tmp_path: Path, algorithm: str) -> LoopConfig:
    """``small_loop`` with 2 GRPO steps of 2 tasks x G=2 in round 1 (and, mixed, 10 continued-SFT steps first)."""
    base = small_loop(tmp_path)
    rl = base.learner.rl.model_copy(
        update={
            "steps_per_round": RL_STEPS,
            "group_size": GROUP,
            "tasks_per_step": TASKS_PER_STEP,
            "rollout_timeout_s": 600,
        }
    )
    return base.model_copy(update={"algorithm": algorithm, "learner": base.learner.model_copy(update={"rl": rl})})


def check_rl(ports: Ports, run_id: str, report_dir: Path, algorithm: str) -> None:
    """Round 1 trained with GRPO on groups the rollout worker ran and the verifier judged, with behaviour
    log-probs on every sampled turn, a logged CARE choice, and the report's rl_steps / care_schedule."""
    events = run_events(ports, run_id)
    requests = [e for e in events if isinstance(e, RolloutRequested) and (e.group_id or "").startswith("grpo:")]
    assert len(requests) == RL_STEPS * TASKS_PER_STEP and {r.round for r in requests} == {1}
    assert all(r.group_size == GROUP and r.temperature and r.policy_version.startswith("local:") for r in requests)
    members = {
        e.episode_id
        for e in events
        if isinstance(e, EpisodeStarted) and (e.group_id or "").startswith("grpo:") and e.parent_episode_id is None
    }
    assert len(members) == RL_STEPS * TASKS_PER_STEP * GROUP
    verified = {e.episode_id for e in events if isinstance(e, EpisodeVerified)}
    assert members <= verified  # judged by the verifier consumer, not by the learner
    turns = [e for e in events if isinstance(e, (ActionTaken, ActionRejected)) and e.episode_id in members]
    assert turns and all(t.sampled is not None for t in turns)
    [completed] = [e for e in events if isinstance(e, TrainingRunCompleted) and e.round == 1]
    assert completed.status == "succeeded" and completed.metrics["rl_steps"] == RL_STEPS
    assert completed.metrics["rl_staleness"] <= 1.0 and completed.metrics["rl_episodes"] == len(members)
    if algorithm == "mixed":
        assert completed.metrics["sft_steps"] > 0 and "train_examples" in completed.metrics
    [choice] = [e for e in events if isinstance(e, RewardScheduleSelected)]
    assert choice.round == 1 and choice.previous == "partial_credit" and "train_success" in choice.inputs
    rounds = json.loads((report_dir / "report.json").read_text())["rounds"]
    assert [r["rl_steps"] for r in rounds] == [0, RL_STEPS]
    assert [r["care_schedule"] for r in rounds] == [None, "partial_credit"]
    assert rounds[1]["rl_episodes"] == len(members)


def run_in_process(tmp_path: Path, loop: LoopConfig, run_id: str) -> LoopResult:
    """``loop`` (from ``small_rl_loop``) in process on the embedded adapters under ``tmp_path``, checked with
    ``check_run`` and ``check_rl``."""
    settings = load_settings(
        bus=f"sqlite:///{tmp_path}/bus.db",
        blobs=f"file:///{tmp_path}/blobs",
        registry=f"sqlite:///{tmp_path}/mlflow.db",
    )
    result = run_loop(settings, loop, run_id=run_id, show_progress=False)
    assert result.bus_url.endswith(f"?namespace={run_id}") and result.dead_letters == 0
    assert [r.round for r in result.rounds] == [0, 1]
    assert result.rounds[1].rl_steps == RL_STEPS and result.rounds[1].rl_episodes == RL_STEPS * TASKS_PER_STEP * GROUP
    ports = open_ports(settings.model_copy(update={"bus": result.bus_url}))
    try:
        check_run(ports, run_id, tmp_path / "runs" / run_id)
        check_rl(ports, run_id, tmp_path / "runs" / run_id, loop.algorithm)
    finally:
        ports.close()
    return result
