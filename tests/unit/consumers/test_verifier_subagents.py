"""A sub-agent's episode is judged as part of its parent's: the verifier gives it no verdict of its own (so it
is never curated, diagnosed or counted as a rollout), and judges the parent from the parent's evidence."""

from __future__ import annotations

import pytest
from consumer_factory import episode_events, obs, task_with

from bus_schemas.actions import Finish, SubagentSpawn, ToolCall
from bus_schemas.events import EpisodeEnded
from consumers.verifier.spec import Verifier
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import Ports, open_bus
from infra.events import ensure_topics, publish_all

pytestmark = pytest.mark.unit


def test_the_verifier_judges_the_parent_and_not_its_sub_agent(tmp_path):
    ports = Ports(open_bus(f"sqlite:///{tmp_path}/bus.db"), FileBlobStore(tmp_path / "blobs"), None)  # type: ignore[arg-type]
    ensure_topics(ports.bus)
    task = task_with({"state"})
    child = episode_events(
        task,
        [(ToolCall(name=task.tools[0], args={}), obs(result={"ok": 1})), (Finish(answer="done"), None)],
        episode_id="sub-0001",
        parent="ep-1",
    )
    result = {"kind": "subagent_result", "child_episode_id": "sub-0001", "summary": "done", "success": True}
    parent = episode_events(task, [(SubagentSpawn(goal="do it"), obs(result=result)), (Finish(), None)])
    publish_all(ports.bus, [task, *child, *parent])
    verifier = Verifier()
    [child_end] = [e for e in child if isinstance(e, EpisodeEnded)]
    [parent_end] = [e for e in parent if isinstance(e, EpisodeEnded)]
    assert verifier.handle(child_end, ports) == []
    [verdict] = verifier.handle(parent_end, ports)
    assert verdict.episode_id == "ep-1" and verdict.task_id == task.task_id
    ports.bus.close()
