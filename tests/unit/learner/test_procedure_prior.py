"""The tiny harness's procedure prior (``learner.procedure_prior``): fitted to the train pool's reference solutions,
shipped as a file that matches a fresh fit, and showing the reference's next tool at more of the dev split's steps
than the goal's words alone, and than a fixed table of each call's two most frequent successors."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from bus_schemas.events.tasks import TaskSpecified
from consumers.harness_reviser.spec import sandbox_procedure
from harness_service.config import HarnessConfig
from harness_service.context.messages import ChatMessage
from harness_service.policy.base import PolicyOutput
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds
from harness_service.tools.selection import successor_table
from infra.blobs.memory import MemoryBlobs
from learner.config import LearnerConfig, tiny_harness
from learner.episodes import run_judged_episode
from learner.jobs import dev_tasks, skills
from learner.procedure_prior import fit, fit_train_pool, tiny_prior
from learner.tasks import template_tasks
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.catalog import TOOLS
from producers.tasks import reference_solver

pytestmark = pytest.mark.unit

_LISTED = re.compile(r"^- ([\w.]+)\(", re.M)


class _Listing:
    """The reference solver as a policy that counts its tool calls the step's system turn lists."""

    def __init__(self, task: TaskSpecified) -> None:
        self.inner = ScriptedPolicy(reference_solver(task), "reference")
        self.name = self.model = self.inner.name
        self.calls = self.listed = 0

    def observe(self, observation) -> None:  # noqa: ANN001
        self.inner.observe(observation)

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        out = self.inner.generate(messages)
        called = re.search(r'"kind":\s*"tool_call",\s*"name":\s*"([\w.]+)"', out.text)
        if called is not None:
            self.calls += 1
            self.listed += called.group(1) in _LISTED.findall(messages[0].content)
        return out


def listed(tasks: Sequence[TaskSpecified], config: HarnessConfig) -> tuple[int, int]:
    """(reference calls whose tool the step's system turn listed, reference calls) over ``tasks``."""
    shown = calls = 0
    for task in tasks:
        policy = _Listing(task)
        harness = Harness(config=config, policy=policy, blobs=MemoryBlobs(), events=lambda e: None, skills=skills())
        assert run_judged_episode(harness, task, SandboxBackend(), RunIds(run_id="t")).verdict.outcome == "success"
        shown, calls = shown + policy.listed, calls + policy.calls
    return shown, calls


def test_the_shipped_prior_is_a_fresh_fit_of_the_train_pool() -> None:
    assert tiny_prior() == fit_train_pool(), "regenerate it: python -m learner.procedure_prior"


def test_the_tiny_harness_shows_the_prior_and_it_names_real_tools_only() -> None:
    compact = tiny_harness().compact
    assert compact is not None and compact.procedure == tiny_prior() and not compact.tool_successors
    named = {t for before, after in tiny_prior().follows.items() for t in (before, *after) if t}
    assert named and named <= set(TOOLS) and set(tiny_prior().cues) <= set(TOOLS)


def test_a_fit_counts_the_tools_that_followed_each_call_and_the_words_of_their_goals() -> None:
    pool = template_tasks("t", [0], "train", lambda t: t.id in ("tu.pay_contact", "tu.update_phone"))
    prior = fit(pool)
    procedures = [sandbox_procedure(t) for t in pool]
    assert all(p and p[0] == "contacts.search_contacts" for p in procedures)
    assert prior.follows[""] == {"contacts.search_contacts": len(pool)}
    after = prior.follows["contacts.search_contacts"]
    assert set(after) == {"wallet.send_money", "contacts.update_phone"} and sum(after.values()) == len(pool)
    assert prior.cues["wallet.send_money"]["pay"] == after["wallet.send_money"]  # every pay_contact goal says "Pay"
    assert "pay" not in prior.cues["contacts.update_phone"]


def test_the_prior_shows_the_reference_tool_at_more_dev_steps_than_a_fixed_table_or_the_goal_alone() -> None:
    tasks = dev_tasks(LearnerConfig(), "t")
    prior = tiny_harness()
    assert prior.compact is not None
    pool = template_tasks("t", range(2), "train", lambda template: True)
    table = successor_table(p for task in pool if (p := sandbox_procedure(task)))
    fixed = prior.model_copy(
        update={"compact": prior.compact.model_copy(update={"procedure": None, "tool_successors": table})}
    )
    goal_only = prior.model_copy(update={"compact": prior.compact.model_copy(update={"procedure": None})})
    with_prior, calls = listed(tasks, prior)
    with_table, table_calls = listed(tasks, fixed)
    without, same_calls = listed(tasks, goal_only)
    assert calls == table_calls == same_calls > 0
    assert with_prior > with_table > without
    assert with_prior >= 0.95 * calls
