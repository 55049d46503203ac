"""The training-ready trajectory bundle: task goal plus normalised (action, feedback) steps, content-addressed.

Only what the policy saw and did goes in, never ids or timings, so two episodes that took the same
actions on the same task produce the same bytes and thus the same blob: that is the duplicate test.
"""

from __future__ import annotations

import orjson

from bus_schemas.events import TaskSpecified
from consumers.common.episode import EpisodeRecord

MEDIA_TYPE = "application/vnd.flywheel.trajectory+json"


def bundle_bytes(task: TaskSpecified, episode: EpisodeRecord) -> bytes:
    steps = []
    for s in episode.steps:
        obs = s.observation
        steps.append(
            {
                "action": s.action.action.model_dump(mode="json"),
                "result": None if obs is None else obs.result,
                "error": None if obs is None or obs.error is None else obs.error.model_dump(mode="json"),
            }
        )
    return orjson.dumps({"task_id": task.task_id, "goal": task.goal, "steps": steps}, option=orjson.OPT_SORT_KEYS)
