"""The diagnoser consumer over an embedded log: a sub-agent episode is read back with its parent, and released after."""

from __future__ import annotations

import pytest
from consumer_factory import episode_events, ids_of, obs, task_with, verdict

from bus_schemas.actions import Finish, SubagentSpawn, ToolCall
from bus_schemas.events import FailureDiagnosed
from bus_schemas.topics import TOPIC_DIAGNOSES
from consumers.diagnoser.spec import Diagnoser
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import Ports, open_bus
from infra.events import decodable, ensure_topics, publish_all

pytestmark = pytest.mark.unit


def test_a_backend_failure_inside_a_sub_agent_is_diagnosed_from_the_log(tmp_path):
    ports = Ports(open_bus(f"sqlite:///{tmp_path}/bus.db"), FileBlobStore(tmp_path / "blobs"), None)  # type: ignore[arg-type]
    ensure_topics(ports.bus)
    task = task_with({"state"})
    child = episode_events(
        task,
        [(ToolCall(name=task.tools[0], args={}), obs(error="unavailable")), (Finish(answer="n/a"), None)],
        episode_id="sub-0001",
        parent="ep-1",
    )
    result = {"kind": "subagent_result", "child_episode_id": "sub-0001", "summary": "n/a", "success": True}
    parent = episode_events(task, [(SubagentSpawn(goal="look it up"), obs(result=result)), (Finish(), None)])
    publish_all(ports.bus, [task, *child, *parent])
    diagnoser = Diagnoser()
    assert diagnoser.handle(verdict(task, ids_of(task, "state"), outcome="error", episode_id="sub-0001"), ports) == []
    [d] = diagnoser.handle(verdict(task, ids_of(task, "state")), ports)
    assert (
        isinstance(d, FailureDiagnosed)
        and (d.attribution, d.step) == ("environment_error", 1)
        and "sub-agent" in d.explanation
    )
    index = diagnoser._sources.episodes  # type: ignore[union-attr]
    assert index.get("ep-1") == [] and index.get("sub-0001") == []  # both released once the parent is decided
    publish_all(ports.bus, [d])
    assert [e.attribution for e in decodable(ports.bus.replay(TOPIC_DIAGNOSES))] == ["environment_error"]
    ports.bus.close()
