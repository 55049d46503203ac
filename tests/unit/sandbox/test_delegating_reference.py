"""The harness reference delegates some sub-agent tasks: the demonstrations include a parent that spawns a
sub-agent and finishes with its summary, verified and admitted like any other success."""

from __future__ import annotations

import hashlib

import pytest

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Producer
from bus_schemas.events import EpisodeEnded, EpisodeStarted
from consumers.common.episode import rebuild_episode
from consumers.curator.handler import curate
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds
from learner.config import LearnerConfig
from learner.episodes import run_judged_episode
from learner.jobs import skills
from learner.tasks import template_tasks
from producers.backends.sandbox.backend import SandboxBackend
from producers.tasks.solver import DELEGATED_TEMPLATES, harness_reference

pytestmark = pytest.mark.unit


class _Blobs:
    def put(self, data: bytes, media_type: str) -> BlobRef:
        return BlobRef(sha256=hashlib.sha256(data).hexdigest(), size=len(data), media_type=media_type)


@pytest.mark.parametrize("template", sorted(DELEGATED_TEMPLATES))
def test_a_delegated_reference_episode_spawns_a_sub_agent_and_is_admitted(template: str) -> None:
    task = next(t for t in template_tasks("t", [0], "train", lambda t: t.id == template))
    harness = Harness(
        config=LearnerConfig().harness,
        policy=ScriptedPolicy(harness_reference(task), "reference"),
        blobs=_Blobs(),
        events=lambda e: None,
        skills=skills(),
    )
    judged = run_judged_episode(harness, task, SandboxBackend(), RunIds(run_id="t", round=0))
    assert judged.verdict.outcome == "success"
    started = [e for e in judged.events if isinstance(e, EpisodeStarted)]
    assert len(started) == 2 and started[1].parent_episode_id == started[0].episode_id
    parent = [e for e in judged.events if e.episode_id == started[0].episode_id]
    ended = next(e for e in parent if isinstance(e, EpisodeEnded))
    assert ended.steps == 2  # spawn, then finish with the summary
    [decision] = curate(
        judged.verdict,
        task,
        rebuild_episode(parent, ended),
        _Blobs().put(b"x", "t"),
        None,
        Producer(service="test", version="0"),
    )
    assert decision.event_type == "TrajectoryAdmitted", decision.reasons
