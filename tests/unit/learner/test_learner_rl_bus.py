"""GRPO through the bus: the learner only publishes RolloutRequested and reads what the real rollout worker and
verifier publish; behaviour log-probs travel with each sampled turn, so the importance ratio is real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bus_schemas.envelope import Producer
from bus_schemas.events.episodes import ActionRejected, ActionTaken, EpisodeStarted
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.topics import TOPIC_EPISODES, TOPIC_ROLLOUTS
from consumers.registry import build
from harness_service.versions import publish_harness_version
from infra.bootstrap import Ports
from infra.events import decodable, publish_all
from infra.runtime import ConsumerRunner
from learner.config import LearnerConfig
from learner.dataset.coldstart import seed_cold_start
from learner.jobs import current_dataset, planner_tokenizer, skills
from learner.model import PromptWindow, build_tiny_model
from learner.model.policy import PlannerPolicy
from learner.rl import RlSettings, RlState, run_steps
from learner.rl.batch import TokenSample
from learner.rl.update import grpo_update
from learner.tasks import template_tasks
from producers.backends.sandbox import SandboxBackend
from producers.pool import EnvironmentPool
from producers.rollout import RolloutWorker
from producers.rollout.versions import VersionResolver

pytestmark = pytest.mark.unit
RUN = "run-rl-bus"
WINDOW = PromptWindow(max_prompt_tokens=96, max_new_tokens=16, goal_tokens=32)


def _tiny(ports: Ports, config: LearnerConfig):  # noqa: ANN202
    pool = template_tasks(RUN, range(2), "train", lambda t: t.id == "tu.set_alarm")
    seed_cold_start(ports, pool, config.harness, skills(), run_id=RUN)
    data = current_dataset(ports, config)
    tokenizer = planner_tokenizer(config, data.examples)
    return (
        pool,
        build_tiny_model(tokenizer, config.tiny.model_copy(update={"hidden_size": 32, "intermediate_size": 64})),
        tokenizer,
    )


@pytest.mark.parametrize("max_staleness", [1, 0])
def test_grpo_steps_take_rollouts_from_the_workers_and_verdicts_from_the_verifier(
    embedded_ports: Ports, tmp_path: Path, max_staleness: int
) -> None:
    ports, config = embedded_ports, LearnerConfig()
    pool, model, tokenizer = _tiny(ports, config)
    publish_all(ports.bus, pool)
    harness = publish_harness_version(
        ports.registry,
        ports.blobs,
        config.harness,
        producer=Producer(service="test", version="0"),
        run_id=RUN,
        aliases=("production",),
        round=0,
    )
    publish_all(ports.bus, [harness])
    envs = EnvironmentPool()
    envs.register("sandbox", SandboxBackend, 1)
    worker = RolloutWorker(
        ports,
        envs,
        name="w0",
        state_dir=tmp_path / "state",
        claim_grace_s=0.0,
        resolver=VersionResolver(ports.registry, ports.bus, tmp_path / "ckpt", check_every_s=0.0),
    )
    verifier = ConsumerRunner(build("verifier"), ports, state_dir=tmp_path / "state")
    state = RlState(model, tokenizer, checkpoints=tmp_path / "rl", window=WINDOW)
    settings = RlSettings(group_size=2, tasks_per_step=2, max_staleness=max_staleness, rollout_timeout_s=300)
    try:
        reports, used = run_steps(
            state,
            ports,
            pool,
            steps=2,
            harness_version=harness.harness_version,
            settings=settings,
            run_id=RUN,
            round=1,
            pump=lambda: worker.step(timeout_s=0.0) + verifier.step(timeout_s=0.0),
        )
    finally:
        worker.close()
        verifier.close()

    requests = [e for e in decodable(ports.bus.replay(TOPIC_ROLLOUTS)) if isinstance(e, RolloutRequested)]
    assert len(requests) == 4 and all(r.group_size == 2 and r.temperature == 1.0 for r in requests)
    assert all(r.policy_version.startswith("local:") and r.group_id.startswith("grpo:") for r in requests)
    assert [r.episodes for r in reports] == [4, 4] and len(used) == 8 and worker.stats.dead_lettered == 0
    if max_staleness:  # the second batch was requested before the first update (workers sample while it trains)
        assert [r.staleness for r in reports] == [0.0, 1.0] and state.step == 2
        assert len({r.policy_version for r in requests}) == 1
    else:  # synchronous: the second batch samples the updated weights
        assert [r.staleness for r in reports] == [0.0, 0.0] and state.step == 2
        assert len({r.policy_version for r in requests}) == 2
    # on-policy, the learner's log-probs are the sampler's: the recorded behaviour log-probs line up token for token
    assert reports[0].mean_abs_log_ratio < 1e-3
    # the CARE figures a tracker charts per step: the schedule scored with, reward spread, mean cost penalty
    assert all(r.care_schedule == state.schedule.name and r.reward_std >= 0.0 <= r.care_penalty for r in reports)
    episodes = list(decodable(ports.bus.replay(TOPIC_EPISODES)))
    mine = {e.episode_id for e in episodes if isinstance(e, EpisodeStarted) and (e.group_id or "").startswith("grpo:")}
    turns = [e for e in episodes if isinstance(e, (ActionTaken, ActionRejected)) and e.episode_id in mine]
    assert turns and all(t.sampled is not None for t in turns)
    sampled = json.loads(ports.blobs.get(turns[0].sampled))
    assert len(sampled["completion_ids"]) == len(sampled["logprobs"]) and all(lp <= 0 for lp in sampled["logprobs"])


def test_the_importance_ratio_uses_behaviour_log_probs_and_is_clipped_for_stale_samples(embedded_ports: Ports) -> None:
    import torch

    config = LearnerConfig()
    _, model, tokenizer = _tiny(embedded_ports, config)
    policy = PlannerPolicy(model, tokenizer, name="p", window=WINDOW, temperature=1.0, seed=3)
    from harness_service.context.messages import ChatMessage

    outs = [policy.generate([ChatMessage(role="user", content=f"set an alarm at {h}:00")]) for h in range(6, 10)]
    samples = [
        TokenSample(
            list(o.sampled.prompt_ids),
            list(o.sampled.completion_ids),
            list(o.sampled.logprobs),
            advantage=1.0 if i % 2 else -1.0,
        )
        for i, o in enumerate(outs)
    ]
    settings = RlSettings(learning_rate=5e-2, clip_eps=0.2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    fresh = grpo_update(model, optimizer, samples, settings, tokenizer.pad_token_id)
    assert fresh.mean_abs_log_ratio < 1e-3 and fresh.clip_fraction == 0.0  # on-policy: ratio 1
    stale = grpo_update(model, optimizer, samples, settings, tokenizer.pad_token_id)  # same samples, moved policy
    assert stale.mean_abs_log_ratio > 1e-3 and stale.max_ratio != pytest.approx(1.0)
    # a constant ratio (exp(logp - logp.detach())) would report no clipping; a real one clips what moved far
    assert stale.clip_fraction >= 0.0 and stale.tokens == fresh.tokens
