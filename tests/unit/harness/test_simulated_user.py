"""The simulated user: a clarifying question gets an answer and the episode goes on; answers are recorded as the
step's observation, replayed byte for byte by the learner, and a task's observation limit reaches the context."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import pytest
from harness_fakes import EventList, MemoryBlobs, NotesBackend, make_task

from bus_schemas.actions import Clarify, Finish
from bus_schemas.events.episodes import ContextBuilt, EpisodeEnded, ObservationReturned
from bus_schemas.events.tasks import SimulatedUser
from harness_service.config import HarnessConfig
from harness_service.context.messages import ChatMessage, decode_context
from harness_service.policy.base import PolicyOutput
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds, run_episode
from harness_service.user import PolicyUser, ScriptedUser, user_for
from learner.dataset.episodes import EpisodeLog
from learner.dataset.render import rerender_episode
from producers.backends import plugins
from producers.tasks import build_task_suite

pytestmark = pytest.mark.unit

ASK = Clarify(question="Which Bob do you mean?")


class UserModel:
    """A stand-in language model for the user: answers with what its system prompt says it knows."""

    name = model = "user-model"

    def __init__(self) -> None:
        self.seen: list[list[ChatMessage]] = []

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        self.seen.append(list(messages))
        return PolicyOutput(text=f" Bob Lee, from design (answer {len(self.seen)}) ", input_tokens=1, output_tokens=1)


def run(script: Sequence[object], task_user: SimulatedUser | None, **harness: object):  # noqa: ANN201
    events, blobs = EventList(), MemoryBlobs()
    h = Harness(
        config=HarnessConfig(),
        policy=ScriptedPolicy(script, "reference"),  # type: ignore[arg-type]
        blobs=blobs,
        events=events,
        **harness,  # type: ignore[arg-type]
    )
    outcome = run_episode(h, make_task(user=task_user), NotesBackend(), RunIds(run_id="r"))
    return outcome, events, blobs


def _context(events: EventList, blobs: MemoryBlobs, step: int) -> str:
    built = next(e for e in events if isinstance(e, ContextBuilt) and e.step == step)
    return "\n".join(m.content for m in decode_context(blobs.blobs[built.context.sha256]))


def test_a_scripted_user_answers_and_the_episode_goes_on_to_finish() -> None:
    outcome, events, blobs = run([ASK, Finish(answer="done")], SimulatedUser(replies=["Bob Lee from design."]))

    assert outcome.reason == "finished" and outcome.answer == "done"
    reply = next(e for e in events if isinstance(e, ObservationReturned) and e.step == 1)
    assert reply.result == {"user": "Bob Lee from design."} and reply.flags == ["user_reply"]
    assert "Bob Lee from design." in _context(events, blobs, 2)  # the planner's next turn sees the answer


def test_when_the_script_runs_out_or_there_is_no_user_a_question_ends_the_episode() -> None:
    outcome, events, _ = run([ASK, ASK, Finish(answer="done")], SimulatedUser(replies=["Bob Lee."]))
    assert outcome.reason == "clarify"
    assert [e.reason for e in events if isinstance(e, EpisodeEnded)] == ["clarify"]
    assert outcome.steps == 2

    outcome, _, _ = run([ASK, Finish(answer="done")], None)
    assert (outcome.reason, outcome.steps) == ("clarify", 1)

    outcome, _, _ = run([ASK, ASK, Finish(answer="done")], SimulatedUser(replies=["a", "b", "c"], max_turns=1))
    assert outcome.reason == "clarify"


def test_a_model_plays_a_user_with_a_persona_that_the_planner_never_sees() -> None:
    model = UserModel()
    persona = "You are Ann. The Bob you mean is Bob Lee from design."
    outcome, events, blobs = run(
        [ASK, ASK, Finish(answer="done")],
        SimulatedUser(persona=persona, max_turns=2),
        users=partial(user_for, user_policy=model),
    )
    assert outcome.reason == "finished"
    assert len(model.seen) == 2
    system = model.seen[1][0]
    assert system.role == "system" and persona in system.content and "Add a note saying hello." in system.content
    # the user model sees the conversation so far: both questions and its own first answer
    assert [m.role for m in model.seen[1][1:]] == ["user", "assistant", "user"]
    assert "Bob Lee, from design (answer 1)" in _context(events, blobs, 2)
    assert persona not in _context(events, blobs, 3)  # the persona stays with the user


def test_a_persona_without_a_user_model_falls_back_to_the_script_or_to_no_user() -> None:
    task = make_task(user=SimulatedUser(persona="Ann.", replies=["Bob Lee."]))
    assert isinstance(user_for(task), ScriptedUser)
    assert user_for(make_task(user=SimulatedUser(persona="Ann."))) is None
    assert isinstance(user_for(task, UserModel()), PolicyUser)


def test_a_replay_feeds_the_recorded_answers_back_byte_for_byte() -> None:
    """Whoever played the user (here a model the replay does not have), the learner re-renders every context."""
    task = next(t for t in build_task_suite("run-test") if t.split == "train" and t.backend == "sandbox")
    task = task.model_copy(update={"user": SimulatedUser(persona="You are the requester.")})
    events, blobs = EventList(), MemoryBlobs()
    harness = Harness(
        config=HarnessConfig(),
        policy=ScriptedPolicy([ASK, Finish(answer="done")], "model"),
        blobs=blobs,
        events=events,
        users=partial(user_for, user_policy=UserModel()),
    )
    run_episode(harness, task, plugins.make_backend("sandbox"), RunIds(run_id="r", episode_id="ep-user"))
    log = EpisodeLog.of([task, *events])
    assert log.episodes["ep-user"].user_replies == {1: "Bob Lee, from design (answer 1)"}

    steps = rerender_episode(log, "ep-user", HarnessConfig(), harness.skills, lambda sha: blobs.blobs[sha])

    assert [s.step for s in steps] == [1, 2]
    assert any("answer 1" in m.content for m in steps[1].messages)


def _first_observation(**task: object) -> str:
    events, blobs = EventList(), MemoryBlobs()
    policy = ScriptedPolicy([Finish(answer="x")], "r")
    harness = Harness(config=HarnessConfig(), policy=policy, blobs=blobs, events=events)
    run_episode(harness, make_task(**task), NotesBackend(), RunIds(run_id="r"))
    return _context(events, blobs, 1).split("# Initial observation", 1)[1]


def test_a_tasks_observation_limit_replaces_the_harness_clip() -> None:
    long_goal = "Add a note saying hello. " + "Policy clause. " * 600  # ~9 KB, echoed as the first observation
    assert HarnessConfig().budgets.turn_chars < 9000
    assert _first_observation(goal=long_goal, observation_chars=20_000).count("Policy clause.") == 600
    assert _first_observation(goal=long_goal).count("Policy clause.") < 600  # clipped at the harness's turn_chars
