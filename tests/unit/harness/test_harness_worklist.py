"""The worklist line (``CompactContext.worklist``): the next id of the newest list result no call has used yet, so a
small model's window keeps the id it needs after the list scrolled out of it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import pytest

from bus_schemas.events.tasks import TaskSpecified
from harness_service.config import HarnessConfig
from harness_service.context.messages import ChatMessage
from harness_service.context.worklist import Worklist
from harness_service.policy.base import PolicyOutput
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds
from infra.blobs.memory import MemoryBlobs
from learner.config import tiny_harness
from learner.episodes import run_judged_episode
from learner.jobs import skills
from learner.tasks import template_tasks
from producers.backends.sandbox.backend import SandboxBackend
from producers.tasks import reference_solver

pytestmark = pytest.mark.unit

TRACKS = [{"id": "trk_1", "title": "A"}, {"id": "trk_2", "title": "B"}, {"id": "trk_3", "title": "C"}]
_LINE = re.compile(r'Not used yet from step (\d+) \((\d+) of (\d+)\): \{"id":"([^"]+)"\}$')


def test_a_list_being_worked_through_names_its_next_unused_id_until_it_is_done() -> None:
    worklist = Worklist()
    worklist.observe(3, TRACKS)
    assert worklist.line() == 'Not used yet from step 3 (3 of 3): {"id":"trk_1"}'
    worklist.use({"playlist_id": "pls_1", "track_id": "trk_1"})
    assert worklist.line() == 'Not used yet from step 3 (2 of 3): {"id":"trk_2"}'
    worklist.use({"ids": ["trk_3"]})  # nested arguments count, in any order
    assert worklist.line() == 'Not used yet from step 3 (1 of 3): {"id":"trk_2"}'
    worklist.use({"track_id": "trk_2"})
    assert worklist.line() is None  # done


@pytest.mark.parametrize(
    "result",
    [
        [{"id": "c_1", "name": "Nora"}],  # one record: a lookup
        ["trk_1", "trk_2"],  # no records
        [{"id": "trk_1"}, {"title": "no id"}],  # not every record has an id
        [{"id": 7}, {"id": 8}],  # ids that are not strings
        {"id": "pls_1", "track_ids": ["trk_1", "trk_2"]},  # a record, not a list
    ],
)
def test_other_results_leave_the_current_list(result: object) -> None:
    worklist = Worklist()
    worklist.observe(2, TRACKS)
    worklist.use({"track_id": "trk_1"})
    worklist.observe(3, result)  # type: ignore[arg-type]
    assert worklist.line() == 'Not used yet from step 2 (2 of 3): {"id":"trk_2"}'


def test_a_newer_list_replaces_the_old_one() -> None:
    worklist = Worklist()
    worklist.observe(2, TRACKS)
    worklist.use({"track_id": "trk_1"})
    worklist.observe(5, [{"id": "em_1"}, {"id": "em_2"}])
    assert worklist.line() == 'Not used yet from step 5 (2 of 2): {"id":"em_1"}'
    worklist.use({"email_id": "trk_2"})  # an id of the old list is no longer tracked
    assert worklist.line() == 'Not used yet from step 5 (2 of 2): {"id":"em_1"}'
    worklist.use({"email_id": "em_2"})
    assert worklist.line() == 'Not used yet from step 5 (1 of 2): {"id":"em_1"}'


class _Recording:
    """The reference solver as a policy that keeps each step's newest observation and the action it took."""

    def __init__(self, task: TaskSpecified) -> None:
        self.inner = ScriptedPolicy(reference_solver(task), "reference")
        self.name = self.model = self.inner.name
        self.steps: list[tuple[str, str]] = []

    def observe(self, observation) -> None:  # noqa: ANN001
        self.inner.observe(observation)

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        out = self.inner.generate(messages)
        self.steps.append((messages[-1].content, out.text))
        return out


def _episode(task: TaskSpecified, config: HarnessConfig) -> list[tuple[str, str]]:
    policy = _Recording(task)
    harness = Harness(config=config, policy=policy, blobs=MemoryBlobs(), events=lambda e: None, skills=skills())
    assert run_judged_episode(harness, task, SandboxBackend(), RunIds(run_id="t")).verdict.outcome == "success"
    return policy.steps


def test_the_tiny_harness_shows_each_step_of_a_playlist_the_track_it_adds_next() -> None:
    config = tiny_harness()
    assert config.compact is not None and config.compact.worklist
    without = config.model_copy(update={"compact": config.compact.model_copy(update={"worklist": False})})
    assert without.digest() != config.digest()
    (task,) = template_tasks("t", [0], "train", lambda t: t.id == "sk.build_playlist")[:1]
    steps = _episode(task, config)
    adds = [json.loads(re.sub(r"^<action>|</action>$", "", action)) for _, action in steps]
    tracks = [a["args"]["track_id"] for a in adds if a.get("name") == "music.add_to_playlist"]
    assert len(tracks) >= 2
    lines = [_LINE.search(observation) for observation, _ in steps]
    shown = [(line.group(4), int(line.group(2))) for line in lines if line is not None]
    # from the artist's tracks on, each observation names the track the reference adds next, and how many are left
    assert shown == [(track, len(tracks) - i) for i, track in enumerate(tracks)]
    assert lines[-1] is None  # the list is done: the reference finishes
    assert all(_LINE.search(observation) is None for observation, _ in _episode(task, without))
