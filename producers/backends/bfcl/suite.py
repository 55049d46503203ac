"""The BFCL suite as ``flywheel suites check`` sees it (entry point ``planner_flywheel.suites`` ``bfcl``): its tasks,
a gold policy's script for each (the ground truth), and the suite's own loop over the same calls, for timing."""

from __future__ import annotations

import importlib
import itertools
import re
from typing import Any

from bus_schemas.actions import Action
from bus_schemas.events.tasks import TaskSpecified
from producers.backends.bfcl.tasks import bfcl_tasks, gold_script, ground_truth

_UTILS = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"
_runs = itertools.count()


class BfclSuite:
    """BFCL multi-turn, one category (``multi_turn_base`` by default)."""

    backend = "bfcl"

    def __init__(self, category: str = "multi_turn_base") -> None:
        self.category = category

    def tasks(self, limit: int | None = None) -> list[TaskSpecified]:
        return bfcl_tasks(self.category, limit)

    def gold(self, task: TaskSpecified) -> list[Action]:
        return gold_script(task)

    def native(self, task: TaskSpecified) -> None:
        """BFCL's own executor (``execute_multi_turn_func_call``) runs the ground truth turn by turn, as its
        checker does: fresh instances, each call ``eval``-ed on them. Its instances live in that module's globals
        under a per-run name; they are dropped afterwards."""
        utils: Any = importlib.import_module(_UTILS)
        params = task.backend_params
        model = f"flywheel_native_{next(_runs)}"
        bfcl_id = str(params["bfcl_id"])
        for turn in ground_truth(self.category)[bfcl_id]:
            utils.execute_multi_turn_func_call(
                turn,
                params["initial_config"],
                params["involved_classes"],
                model,
                bfcl_id,
                long_context=bool(params.get("long_context", False)),
            )
        prefix = re.sub(r"[-./:]", "_", f"{model}_{bfcl_id}_")
        for name in [n for n in vars(utils) if n.startswith(prefix)]:
            delattr(utils, name)


def suite() -> BfclSuite:
    """``bfcl``: the ``multi_turn_base`` category."""
    return BfclSuite()


def long_context_suite() -> BfclSuite:
    """``bfcl.long_context``: the ``multi_turn_long_context`` category (the same entries with large states)."""
    return BfclSuite("multi_turn_long_context")
