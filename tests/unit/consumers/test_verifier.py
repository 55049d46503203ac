"""The verifier rebuilds each episode from the embedded log and its evidence blob, and
judges it by the task's criteria."""

from __future__ import annotations

import pytest
from consumer_factory import P, suite

from bus_schemas.events import EpisodeEnded
from consumers.common.recording import record_episode
from consumers.common.sources import MissingInput
from consumers.verifier.handler import judge
from consumers.verifier.spec import Verifier
from infra.bootstrap import Ports, open_blob_store, open_bus
from infra.events import ensure_topics, publish_all
from producers.tasks import reference_solver
from producers.tasks.runner import noop_policy

pytestmark = pytest.mark.unit


@pytest.fixture
def ports(tmp_path):
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    yield Ports(bus, open_blob_store(f"file:///{tmp_path}/blobs"), registry=None)  # type: ignore[arg-type]
    bus.close()


def _run(ports, task, policy, episode_id):
    events = record_episode(task, policy, ports.blobs, episode_id=episode_id)
    publish_all(ports.bus, events)
    return events[-1]


def test_the_reference_solution_passes_and_doing_nothing_fails(ports):
    task = next(t for t in suite() if t.split == "train")
    publish_all(ports.bus, [task])
    verifier = Verifier()
    good, bad = _run(ports, task, reference_solver, "ep-good"), _run(ports, task, noop_policy, "ep-bad")
    [v_good], [v_bad] = verifier.handle(good, ports), verifier.handle(bad, ports)
    assert (v_good.outcome, v_good.score) == ("success", 1.0) and v_good.causation_id == good.event_id
    assert (
        v_bad.outcome == "failure"
        and v_bad.score < 1
        and [c.criterion_id for c in v_bad.criteria] == [c.id for c in task.criteria]
    )
    assert v_good.evidence == [good.final_state] and all(c.evidence == [good.final_state] for c in v_good.criteria)


def test_a_redelivered_episode_is_judged_the_same_after_its_events_were_forgotten(ports):
    task = next(t for t in suite() if t.split == "train")
    publish_all(ports.bus, [task])
    ended = _run(ports, task, reference_solver, "ep-again")
    verifier = Verifier()
    first, again = verifier.handle(ended, ports)[0], verifier.handle(ended, ports)[0]
    assert (first.outcome, first.criteria) == (again.outcome, again.criteria)


def test_an_episode_of_an_unknown_task_is_a_missing_input(ports):
    task = next(t for t in suite() if t.split == "train")
    ended = _run(ports, task, noop_policy, "ep-orphan")
    with pytest.raises(MissingInput, match=task.task_id):
        Verifier().handle(ended, ports)


def test_no_evidence_or_an_unknown_backend_is_an_error_not_a_failure():
    task = next(t for t in suite() if t.split == "train")
    ended = EpisodeEnded(
        producer=P,
        run_id="r",
        task_id=task.task_id,
        episode_id="e",
        reason="error",
        steps=0,
        input_tokens=0,
        output_tokens=0,
        tool_calls=0,
        wall_time_s=0.0,
    )
    assert judge(ended, task, "sandbox", None, P).outcome == "error"
    assert "no verifier for backend 'device'" in judge(ended, task, "device", None, P).criteria[0].detail


def test_the_verifier_decodes_no_step_of_the_episode_it_judges(ports, monkeypatch):
    """It needs the episode's start (backend, parent) only: its steps stay raw records in the index."""
    import consumers.common.log_index as log_index

    task = next(t for t in suite() if t.split == "train")
    publish_all(ports.bus, [task])
    ended = _run(ports, task, reference_solver, "ep-lean-read")
    decoded: list[str] = []
    real = log_index.from_record
    monkeypatch.setattr(log_index, "from_record", lambda r: decoded.append(real(r).event_type) or real(r))
    [verdict] = Verifier().handle(ended, ports)
    assert verdict.outcome == "success"
    assert "EpisodeStarted" in decoded and not {"ActionTaken", "ObservationReturned", "ContextBuilt"} & set(decoded)


def test_a_start_the_verifier_saw_spares_the_log_lookup_and_gives_the_same_verdict(ports, monkeypatch):
    from bus_schemas.events import EpisodeStarted
    from consumers.common.log_index import LogIndex

    task = next(t for t in suite() if t.split == "train")
    publish_all(ports.bus, [task])
    events = record_episode(task, reference_solver, ports.blobs, episode_id="ep-seen")
    publish_all(ports.bus, events)
    started, ended = events[0], events[-1]
    assert isinstance(started, EpisodeStarted)
    from_log = Verifier().handle(ended, ports)[0]  # a replica that never saw the start (restart, rebalance)

    def no_lookup(*_a, **_k):
        raise AssertionError("the start was seen: no log lookup")

    monkeypatch.setattr(LogIndex, "first_of", no_lookup)
    verifier = Verifier()
    assert verifier.handle(started, ports) == []
    remembered = verifier.handle(ended, ports)[0]
    assert remembered.model_dump(exclude={"event_id", "occurred_at"}) == from_log.model_dump(
        exclude={"event_id", "occurred_at"}
    )
