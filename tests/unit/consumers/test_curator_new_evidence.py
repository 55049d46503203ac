"""Dedupe keeps new evidence: the model's success on an instance it was not trained on is admitted, while the
same actions on the same instance (a memorised replay of a demonstration) are a duplicate."""

from __future__ import annotations

import hashlib

import pytest
from consumer_factory import P, episode, obs, suite, verdict

from bus_schemas.actions import Finish, StateChange, ToolCall
from bus_schemas.blob_ref import BlobRef
from consumers.curator.bundle import MEDIA_TYPE, bundle_bytes
from consumers.curator.handler import curate

pytestmark = pytest.mark.unit
CHANGE = StateChange(path="/notes/items/n_1", op="added", after={"id": "n_1"})


def _success(task, episode_id):
    steps = [
        (ToolCall(name=task.tools[0], args={}), obs(result={"ok": True}, changes=(CHANGE,))),
        (Finish(answer=""), None),
    ]
    return episode(task, steps, episode_id=episode_id)


def _bundle(task, ep) -> BlobRef:
    data = bundle_bytes(task, ep)
    return BlobRef(sha256=hashlib.sha256(data).hexdigest(), size=len(data), media_type=MEDIA_TYPE)


def test_a_model_success_on_a_new_instance_of_a_demonstrated_template_is_admitted():
    template = next(
        t
        for t in suite()
        if t.split == "train"
        and "state" in {c.kind for c in t.criteria}
        and "answer" not in {c.kind for c in t.criteria}
    )
    shown, new = [t for t in suite() if t.split == "train" and t.source.template_id == template.source.template_id][:2]
    demo = _success(shown, "ep-demo")
    admitted = {_bundle(shown, demo).sha256: "ep-demo"}  # the reference episode, admitted in round 0
    replay, fresh = _success(shown, "ep-replay"), _success(new, "ep-new")

    [dup] = curate(
        verdict(shown, episode_id="ep-replay"),
        shown,
        replay,
        _bundle(shown, replay),
        admitted.get(_bundle(shown, replay).sha256),
        P,
    )
    assert dup.event_type == "TrajectoryRejected" and dup.reasons == ["duplicate of ep-demo (same task and actions)"]

    assert _bundle(new, fresh).sha256 not in admitted  # same template and actions, another instance: new evidence
    [out] = curate(
        verdict(new, episode_id="ep-new"), new, fresh, _bundle(new, fresh), admitted.get(_bundle(new, fresh).sha256), P
    )
    assert out.event_type == "TrajectoryAdmitted" and out.task_id == new.task_id
