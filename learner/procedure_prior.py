"""The tiny harness's procedure prior: which tools a compact context shows first after each call, fitted to the
reference solutions of the cold-start pool and shipped as ``procedure_prior.json``.

A compact context shows three tools a step (``CompactContext.tool_top_k``). Chosen by BM25 of the goal alone, with
the loaded skill's and the called tools first, they include the tool the reference solution calls at that step for
46% of the calls of the dev split's solutions (110 of 239; no skill loaded) and 44% of the train pool's. A model
that is not shown a tool has to remember its name and arguments (the tiny planner writes ``wallet.send`` and
``weather.on``, tools that do not exist). With the tools that followed each call in the train pool's solutions shown
first (``tool_successors``, at most two, ``""`` for the first call) they include it for 87% (208 of 239; train
86%). Fitted to the train split only (the built-in suites the cold start draws its demonstrations from), so dev and
test stay unseen; the reviser's ``add_tool_successors`` edits the same table from failing traces later on.

Regenerate after a template or the sandbox's tools change (a test fails until then)::

    .venv/bin/python -m learner.procedure_prior
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from bus_schemas.events.tasks import TaskSpecified
from harness_service.tools.selection import successor_table

PRIOR_FILE = Path(__file__).with_name("procedure_prior.json")
FIT_SEEDS = range(2)
"""The built-in suites fitted: the cold start's pool (``LearnerConfig.cold_start_seeds``)."""

Successors = dict[str, tuple[str, ...]]


def fit(tasks: Iterable[TaskSpecified]) -> Successors:
    """The successor table of the sandbox reference solutions of ``tasks`` (tasks without one are left out)."""
    from consumers.harness_reviser.spec import sandbox_procedure

    return successor_table(p for task in tasks if (p := sandbox_procedure(task)))


def fit_train_pool() -> Successors:
    """``fit`` over the train split of the built-in suites ``FIT_SEEDS``, every template and difficulty."""
    from learner.tasks import template_tasks

    return fit(template_tasks("procedure-prior", FIT_SEEDS, "train", lambda template: True))


@cache
def tiny_successors() -> Successors:
    """The shipped table (``PRIOR_FILE``)."""
    raw = json.loads(PRIOR_FILE.read_text())
    return {before: tuple(after) for before, after in raw.items()}


def main() -> None:
    table = fit_train_pool()
    PRIOR_FILE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PRIOR_FILE} ({len(table)} tools)")


if __name__ == "__main__":
    main()
