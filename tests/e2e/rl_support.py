"""A small ``--algorithm mixed`` loop (round 1: continued SFT, then GRPO through the bus) and its checks."""

from __future__ import annotations

import json
from pathlib import Path

from loop_support import run_events, small_loop

from bus_schemas.events import (
    ActionRejected,
    ActionTaken,
    EpisodeStarted,
    EpisodeVerified,
    RewardScheduleSelected,
    RolloutRequested,
    TrainingRunCompleted,
)
from infra.bootstrap import Ports
from infra.loop.config import LoopConfig

RL_STEPS, GROUP, TASKS_PER_STEP = 2, 2, 2


def small_mixed_loop(tmp_path: Path) -> LoopConfig:
    """``small_loop`` with 10 continued-SFT steps, then 2 GRPO steps of 2 tasks x G=2, in round 1."""
    base = small_loop(tmp_path)
    rl = base.learner.rl.model_copy(
        update={
            "steps_per_round": RL_STEPS,
            "group_size": GROUP,
            "tasks_per_step": TASKS_PER_STEP,
            "rollout_timeout_s": 600,
        }
    )
    return base.model_copy(update={"algorithm": "mixed", "learner": base.learner.model_copy(update={"rl": rl})})


def check_rl(ports: Ports, run_id: str, report_dir: Path) -> None:
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
    assert completed.metrics["sft_steps"] > 0 and "train_examples" in completed.metrics  # continued SFT first
    [choice] = [e for e in events if isinstance(e, RewardScheduleSelected)]
    assert choice.round == 1 and choice.previous == "partial_credit" and "train_success" in choice.inputs
    rounds = json.loads((report_dir / "report.json").read_text())["rounds"]
    assert [r["rl_steps"] for r in rounds] == [0, RL_STEPS]
    assert [r["care_schedule"] for r in rounds] == [None, "partial_credit"]
    assert rounds[1]["rl_episodes"] == len(members)
