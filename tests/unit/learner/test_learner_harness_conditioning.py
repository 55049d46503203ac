"""What the model sees is what the harness builds: the learner's window keeps the compact system turn, so a
harness revision (an instruction, a skill, a tool description) changes the token ids the model is conditioned on."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pytest

from bus_schemas.events.tasks import TaskSpecified
from consumers.harness_reviser.spec import sandbox_procedure
from harness_service.config import HarnessConfig
from harness_service.context.messages import ChatMessage, render_messages
from harness_service.policy.base import PolicyOutput
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.revisions import AddInstruction, AddSkill, AddToolSuccessors, apply
from harness_service.runner.episode import Harness, RunIds
from harness_service.skills.library import SkillLibrary
from infra.blobs.memory import MemoryBlobs
from learner.config import LearnerConfig
from learner.episodes import run_judged_episode
from learner.jobs import skills, window
from learner.model import train_tokenizer
from learner.model.value_slots import SLOT_TOKENS
from learner.model.window import turn_corpus
from learner.tasks import template_tasks
from producers.backends.sandbox.backend import SandboxBackend
from producers.tasks import reference_solver

pytestmark = pytest.mark.unit


class _Recording:
    """The reference solver as a policy that keeps the rendered prompt of every step (what a model would get)."""

    def __init__(self, task: TaskSpecified) -> None:
        self.inner = ScriptedPolicy(reference_solver(task), "reference")
        self.name = self.model = self.inner.name
        self.prompts: list[str] = []

    def observe(self, observation) -> None:  # noqa: ANN001
        self.inner.observe(observation)

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        self.prompts.append(render_messages(messages))
        return self.inner.generate(messages)


def prompts(task: TaskSpecified, config: HarnessConfig, library: SkillLibrary | None = None) -> list[str]:
    policy = _Recording(task)
    harness = Harness(
        config=config, policy=policy, blobs=MemoryBlobs(), events=lambda e: None, skills=library or skills()
    )
    judged = run_judged_episode(harness, task, SandboxBackend(), RunIds(run_id="t"))
    assert judged.verdict.outcome == "success"
    return policy.prompts


@pytest.fixture(scope="module")
def tasks() -> dict[str, TaskSpecified]:
    pool = template_tasks("t", [0], "train", lambda t: True)
    skill_task = next(t for t in pool if t.category == "skills" and t.skills)
    return {"tool_use": next(t for t in pool if t.category == "tool_use"), "skills": skill_task}


@pytest.fixture(scope="module")
def tokenizer(tasks: dict[str, TaskSpecified]):
    config = LearnerConfig().harness
    texts = [p for t in tasks.values() for p in prompts(t, config)]
    return train_tokenizer(list(turn_corpus(texts)), vocab_size=512, extra_special=SLOT_TOKENS)  # the default window


def conditioned(
    tokenizer, task: TaskSpecified, config: HarnessConfig, library: SkillLibrary | None = None
) -> list[list[int]]:  # noqa: ANN001
    learner = LearnerConfig()
    return [window(learner).prompt_ids(tokenizer, p) for p in prompts(task, config, library)]


def test_the_default_window_shows_the_compact_system_turn_goal_and_newest_turns(tokenizer, tasks) -> None:
    config = LearnerConfig().harness
    assert config.compact is not None
    ids = conditioned(tokenizer, tasks["tool_use"], config)
    first = tokenizer.decode(ids[0])
    assert first.startswith("<|im_start|>system\n" + config.instructions)
    assert "# Tools\n- " in first and "<|im_start|>user\n# Task\n" in first
    assert all(len(step) <= LearnerConfig().max_prompt_tokens for step in ids)


def test_an_instruction_revision_changes_the_conditioning_ids(tokenizer, tasks) -> None:
    base = LearnerConfig().harness
    revised = apply(base, AddInstruction(text="Search before you update."))
    assert revised.digest() != base.digest()
    before, after = conditioned(tokenizer, tasks["tool_use"], base), conditioned(tokenizer, tasks["tool_use"], revised)
    assert all(b != a for b, a in zip(before, after, strict=True))  # every step sees the revision


def test_a_skill_note_and_a_skill_body_edit_change_the_conditioning_ids(tokenizer, tasks) -> None:
    base, task = LearnerConfig().harness, tasks["skills"]
    noted = apply(base, AddSkill(name="contacts", tools=["contacts.search_contacts"], note="Search by full name."))
    assert conditioned(tokenizer, task, noted)[0] != conditioned(tokenizer, task, base)[0]
    library = skills()
    name = task.skills[0]
    edited = SkillLibrary(
        [
            library.get(n).model_copy(update={"body": "Check the calendar first.\n" + library.get(n).body})
            if n == name
            else library.get(n)
            for n in library.names()
        ],
        "sha256:edited",
    )
    before, after = conditioned(tokenizer, task, base), conditioned(tokenizer, task, base, edited)
    loaded = [i for i, ids in enumerate(before) if f"# Skill {name}" in tokenizer.decode(ids)]
    assert loaded, "the reference solver loads the task's skill"
    assert all(before[i] != after[i] for i in loaded)


def test_a_tool_description_edit_changes_the_conditioning_ids(tokenizer, tasks) -> None:
    base, task = LearnerConfig().harness, tasks["tool_use"]
    shown = tokenizer.decode(conditioned(tokenizer, task, base)[0])
    tool = shown.split("# Tools\n- ", 1)[1].split("(", 1)[0]
    noted = base.model_copy(update={"compact": base.compact.model_copy(update={"tool_notes": {tool: "look up first"}})})
    assert noted.digest() != base.digest()
    after = tokenizer.decode(conditioned(tokenizer, task, noted)[0])
    assert f"- {tool}(" in after and "look up first" in after
    assert conditioned(tokenizer, task, noted)[0] != conditioned(tokenizer, task, base)[0]


def test_a_successor_edit_shows_its_tools_first_and_changes_the_conditioning_ids(tokenizer, tasks) -> None:
    base, task = LearnerConfig().harness, tasks["tool_use"]
    calls = sandbox_procedure(task)
    assert calls is not None and len(calls) >= 2 and calls[0] != calls[1] and base.compact is not None
    shown = tokenizer.decode(conditioned(tokenizer, task, base)[0]).split("# Tools\n", 1)[1]
    assert shown.startswith(f"- {calls[0]}(")  # the goal-ranked prior already shows the first call first
    learned = apply(base, AddToolSuccessors(successors={"": (calls[1], calls[0])}))  # the edit's entry wins
    assert learned.digest() != base.digest()
    before, after = conditioned(tokenizer, task, base), conditioned(tokenizer, task, learned)
    tools = tokenizer.decode(after[0]).split("# Tools\n", 1)[1].split("<|im_end|>", 1)[0]
    assert tools.startswith(f"- {calls[1]}(") and f"\n- {calls[0]}(" in tools
    assert before[0] != after[0]


def test_a_config_without_the_compact_profile_keeps_its_digest() -> None:
    plain = HarnessConfig(name="x")
    before = plain.model_dump_json(exclude={"compact", "action_syntax"})  # the fields that came later, at defaults
    assert "compact" not in before and "action_syntax" not in before
    assert plain.digest() == "sha256:" + hashlib.sha256(before.encode()).hexdigest()
    assert HarnessConfig.model_validate_json(plain.model_dump_json()).digest() == plain.digest()


def test_training_examples_condition_on_the_same_ids_as_the_live_policy(embedded_ports, tokenizer, tasks) -> None:
    from learner.dataset import build_dataset, read_log
    from learner.dataset.coldstart import seed_cold_start
    from learner.jobs import harness_version

    config, task = LearnerConfig(), tasks["skills"]
    seed_cold_start(embedded_ports, [task], config.harness, skills(), run_id="t")
    build = build_dataset(
        read_log(embedded_ports.bus), {harness_version(config): config.harness}, skills(), embedded_ports.blobs.get
    )
    assert build.skipped == {} and build.examples
    trained = [window(config).prompt_ids(tokenizer, e.prompt) for e in sorted(build.examples, key=lambda e: e.step)]
    assert trained == conditioned(tokenizer, task, config.harness)  # train (re-rendered) == serve (live)
