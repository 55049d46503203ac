"""The tiny harness's procedure prior: which tools a compact context shows first after each call, for the goal at
hand, fitted to the reference solutions of the cold-start pool and shipped as ``procedure_prior.json``.

A compact context shows three tools a step (``CompactContext.tool_top_k``). Chosen by BM25 of the goal alone, with
the loaded skill's and the called tools first, they include the tool the reference solution calls at that step for
46% of the calls of the dev split's solutions (110 of 239; no skill loaded) and 44% of the train pool's. A model
that is not shown a tool has to remember its name and arguments (the tiny planner writes ``wallet.send`` and
``weather.on``, tools that do not exist). With the two tools that most often followed each call in the train pool's
solutions shown first (a fixed table, ``CompactContext.tool_successors``; ``""`` for the first call) they include it
for 87% (208 of 239; train 86%). On the whole dev split (128 tasks, 493 calls, no skill loaded) the fixed table
shows it for 424 calls (test: 422 of 490); the steps it misses are a call whose next tool depends on what the goal
asks: after ``contacts.search_contacts``, ``messages.send`` for "Text my babysitter...", ``messages.conversation``
for "How many unread messages do I have from...", ``wallet.send_money`` for "Pay ...". Ranking every tool that
followed the call by the goal's words (``ProcedurePrior``, naive Bayes over the goals of the solutions that called
it, ``harness_service.tools.selection.goal_successors``) shows it for 493 of 493 (test 490 of 490); ranking the same
successors by BM25 of the goal over the tools' descriptions instead, for 465 (462). Measured 2026-12-07 with the
harness's own selection code over the reference solutions (an ad-hoc script; ``tests/unit/learner/
test_procedure_prior.py`` checks the real harness on the dev slice).

Fitted to the train split only (the built-in suites the cold start draws its demonstrations from), so dev and
test stay unseen; the reviser's ``add_tool_successors`` edits override it per call later on.

Regenerate after a template or the sandbox's tools change (a test fails until then)::

    .venv/bin/python -m learner.procedure_prior
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path

from bus_schemas.events.tasks import TaskSpecified
from harness_service.config import ProcedurePrior
from harness_service.tools.selection import fit_procedure

PRIOR_FILE = Path(__file__).with_name("procedure_prior.json")
FIT_SEEDS = range(2)
"""The built-in suites fitted: the cold start's pool (``LearnerConfig.cold_start_seeds``)."""


def fit(tasks: Iterable[TaskSpecified]) -> ProcedurePrior:
    """``fit_procedure`` over the sandbox reference solutions of ``tasks`` (tasks without one are left out)."""
    from consumers.harness_reviser.spec import sandbox_procedure

    return fit_procedure((task.goal, p) for task in tasks if (p := sandbox_procedure(task)))


def fit_train_pool() -> ProcedurePrior:
    """``fit`` over the train split of the built-in suites ``FIT_SEEDS``, every template and difficulty."""
    from learner.tasks import template_tasks

    return fit(template_tasks("procedure-prior", FIT_SEEDS, "train", lambda template: True))


@cache
def tiny_prior() -> ProcedurePrior:
    """The shipped prior (``PRIOR_FILE``)."""
    return ProcedurePrior.model_validate_json(PRIOR_FILE.read_bytes())


def main() -> None:
    prior = fit_train_pool()
    PRIOR_FILE.write_text(prior.model_dump_json(indent=1) + "\n")
    cues = sum(len(words) for words in prior.cues.values())
    print(f"wrote {PRIOR_FILE} ({len(prior.follows)} calls with successors, {cues} goal-word cues)")


if __name__ == "__main__":
    main()
