"""What one tiny planner trained from random init does: SFT lifts held-out dev success, and the revision channel
works on it: for the fixed checkpoint, an edit of the system turn the harness renders changes what it does on dev,
the paired A/B against the parent harness (same checkpoint, same task instances and seeds) measures it, and the dev
evaluator's decision keeps a harmful revision out of ``@production`` while a revision that does not regress goes in.

One module-scoped SFT run on CPU, shared by every test here (one file, so xdist's per-file scheduling keeps them on
one worker): reference episodes of two tool-use templates (train split of 12 suite seeds), the learner's own
448-token window that keeps the compact system turn. The dev tasks are instances of a suite seed never trained on
(new worlds, labels x times combinations). The official dev split draws times from hours that never occur in train
(11/14/17/20 vs 10/13/16/19/22); this budget does not generalise to those. GRPO through the bus:
test_learner_rl_bus.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bus_schemas.envelope import Producer
from bus_schemas.events import DevSetEvaluated, FailureDiagnosed, TaskSpecified
from bus_schemas.events.tasks import Split
from consumers.dev_evaluator.handler import AB_DECIDER, PairedResult, compare_paired, revision_decided
from consumers.harness_reviser.rules import WINDOW_KINDS, Cluster, window_edit
from consumers.harness_reviser.spec import sandbox_docs, sandbox_procedure
from harness_service.config import HarnessConfig
from harness_service.revisions import AddInstruction, SetToolNote, apply
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics
from learner.config import LearnerConfig
from learner.dataset.coldstart import seed_cold_start
from learner.eval import evaluate_dev
from learner.jobs import current_dataset, planner_tokenizer, skills, window
from learner.model import PlannerPolicy, build_tiny_model
from learner.sft import SftSettings, train_sft
from learner.tasks import template_tasks

# One SFT run of 150 steps (dev success 0.50 after it, as after 300), ~2 min with pytest's one torch thread
# (tests/conftest.py): every test of this file is e2e, so make test-fast (-m unit) stays quick; make test runs them.
pytestmark = pytest.mark.timeout(1800)
TEMPLATES = {"tu.set_alarm", "tu.reminder_due"}
SFT = SftSettings(max_steps=150, batch_size=16, learning_rate=3e-3, logging_steps=100)
P = Producer(service="test", version="0")
THINK_FIRST = (
    "Before any action, think about every tool the phone offers and list the apps you would open, "
    "in which order, and why.",
    "Then think again about each app: what it holds, what it changes, what could go wrong, and which memories matter.",
)


def tasks(split: Split, seeds: range) -> list[TaskSpecified]:
    return template_tasks("run-channel", seeds, split, lambda t: t.id in TEMPLATES)


@dataclass
class Checkpoint:
    ports: Ports
    config: LearnerConfig
    model: Any
    tokenizer: Any
    dev: list[TaskSpecified]
    before: float
    """Dev success of the same model before SFT (random init), on every sixth dev task."""


@dataclass
class Evaluation:
    evaluated: DevSetEvaluated
    solved: dict[str, bool]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Checkpoint:
    root: Path = tmp_path_factory.mktemp("channel")
    ports = Ports(
        open_bus(f"sqlite:///{root}/bus.db?session_timeout_s=1.5"),
        open_blob_store(f"file:///{root}/blobs"),
        open_registry(f"sqlite:///{root}/mlflow.db"),
    )
    ensure_topics(ports.bus)
    # free decoding: constrained decoding (the default) repairs most of the unusable outputs a shifted system turn
    # causes (2026-12-07: the two lines below then lost too few dev tasks of this checkpoint to be told from noise);
    # what these tests pin is that the edit reaches the model and the A/B decides on what it does
    config = LearnerConfig(constrained_actions=False)
    assert config.system_tokens > 0 and config.harness.compact is not None  # the window keeps the system turn
    seed_cold_start(ports, tasks("train", range(2, 14)), config.harness, skills(), run_id="run-channel")
    data = current_dataset(ports, config)
    tokenizer = planner_tokenizer(config, data.examples)
    model = build_tiny_model(tokenizer, config.tiny)
    dev = tasks("train", range(40, 41))
    # a random-init model writes to the token limit on every step: a sixth of the tasks (both templates) shows it
    # solves none, at a sixth of the cost of all 36
    before = evaluate(Checkpoint(ports, config, model, tokenizer, dev[::6], before=0.0), config.harness)
    ck = Checkpoint(ports, config, model, tokenizer, dev, before=sum(before.solved.values()) / len(before.solved))
    train_sft(model, tokenizer, data.examples, root / "sft", settings=SFT, window=window(config))
    return ck


def evaluate(ck: Checkpoint, harness: HarnessConfig) -> Evaluation:
    """The fixed checkpoint on every dev task (greedy, the task's seed) under ``harness``."""
    policy = PlannerPolicy(ck.model, ck.tokenizer, name="planner/1", window=window(ck.config))
    report = evaluate_dev(
        policy,
        ck.dev,
        config=harness,
        skills=skills(),
        blobs=ck.ports.blobs,
        publish=lambda events: None,
        run_id="run-channel",
        model_name="planner",
        model_version="1",
    )
    solved = {t.task_id: e.verdict.outcome == "success" for t, e in zip(ck.dev, report.episodes, strict=True)}
    return Evaluation(report.evaluated, solved)


def ab(ck: Checkpoint, parent: Evaluation, revision: Evaluation) -> PairedResult:
    paired = compare_paired(parent.solved, revision.solved, {t.task_id: t.category for t in ck.dev}, seed="channel")
    assert paired is not None and paired.tasks == len(ck.dev)
    return paired


@pytest.fixture(scope="module")
def parent(checkpoint: Checkpoint) -> Evaluation:
    result = evaluate(checkpoint, checkpoint.config.harness)
    rate = sum(result.solved.values()) / len(result.solved)
    assert rate >= 0.5, f"the fixed checkpoint solves {rate:.2f} of {len(result.solved)} dev tasks"
    return result


@pytest.mark.e2e
def test_sft_from_random_init_lifts_held_out_dev_success(checkpoint, parent):
    # a random-init model cannot even emit a parseable action; chance success is 0 on every task it ran
    assert checkpoint.before == 0.0
    after = sum(parent.solved.values()) / len(parent.solved)
    assert after >= 0.5, f"dev success after SFT {after:.2f} over {len(parent.solved)} tasks"


@pytest.mark.e2e
def test_a_harmful_system_turn_edit_changes_dev_behaviour_beyond_the_uncertainty_and_is_not_promoted(
    checkpoint, parent
):
    """Two instruction lines the model never trained with: the compact system turn (instructions, then the step's
    tools) shifts and reaches the model changed. Before value slots one line lost 8 of 36 dev tasks of this
    checkpoint, none won, delta -0.111 [-0.181, -0.042]; with slots (2026-12-06) one line lost 2, delta -0.028
    [-0.069, +0.000], within the noise, so the edit is now two lines. (On the earlier 300-step checkpoint,
    dropping the tool list, ``tool_top_k=0``, lost only 2: for these two templates the goal names the tool.)"""
    base = checkpoint.config.harness
    harmful = apply(apply(base, AddInstruction(text=THINK_FIRST[0])), AddInstruction(text=THINK_FIRST[1]))
    revision = evaluate(checkpoint, harmful)
    paired = ab(checkpoint, parent, revision)
    assert paired.losses >= 0.15 * paired.tasks and paired.wins < paired.losses
    assert paired.high < 0, f"delta {paired.delta:+.3f} [{paired.low:+.3f}, {paired.high:+.3f}]"  # beyond the noise
    decided = revision_decided(revision.evaluated, base.name, "rev-harmful", "tiny-planner/1", paired, P)
    assert (decided.decision, decided.decided_by) == ("rejected", AB_DECIDER)
    assert decided.metrics["paired_delta"] == pytest.approx(revision.evaluated.overall - parent.evaluated.overall)


@pytest.mark.e2e
def test_a_revision_that_does_not_regress_is_promoted(checkpoint, parent):
    base = checkpoint.config.harness
    unseen = apply(base, SetToolNote(tool="maps.route", note="route before booking"))  # no dev task shows it
    assert unseen.digest() != base.digest()
    revision = evaluate(checkpoint, unseen)
    paired = ab(checkpoint, parent, revision)
    assert (paired.delta, paired.wins, paired.losses) == (0, 0, 0)  # the same tokens reach the model: same episodes
    decided = revision_decided(revision.evaluated, base.name, "rev-neutral", "tiny-planner/1", paired, P)
    assert decided.decision == "accepted"


@pytest.mark.e2e
def test_the_revisers_own_window_edit_is_decided_by_its_paired_result(checkpoint, parent):
    """The reviser drafts an edit from the checkpoint's failing tasks' traces; the A/B, not the draft, decides."""
    # the tasks the checkpoint fails; one that solves every dev task (the copy bias can) is diagnosed on all of them
    failing = [t for t in checkpoint.dev if not parent.solved[t.task_id]] or list(checkpoint.dev)
    diagnoses = tuple(
        FailureDiagnosed(
            producer=P,
            run_id="run-channel",
            round=1,
            task_id=t.task_id,
            episode_id=f"ep-{i}",
            attribution="invalid_output",
            explanation="crafted",
            confidence=0.8,
            diagnoser_version="v",
        )
        for i, t in enumerate(failing)
    )
    traces = {t.task_id: calls for t in failing if (calls := sandbox_procedure(t))}
    cluster = Cluster("invalid_output", diagnoses, {t.task_id: t for t in failing}, traces)
    base = checkpoint.config.harness
    draft = window_edit(cluster, base, sandbox_docs)
    assert draft is not None and draft.patch.kind in WINDOW_KINDS
    revised = apply(base, draft.patch)
    assert revised.compact != base.compact and revised.instructions == base.instructions
    revision = evaluate(checkpoint, revised)
    paired = ab(checkpoint, parent, revision)
    decided = revision_decided(revision.evaluated, base.name, "rev-drafted", "tiny-planner/1", paired, P)
    assert decided.decision == ("rejected" if paired.delta < 0 else "accepted")
    print(
        f"{draft.patch}: paired delta {paired.delta:+.3f} [{paired.low:+.3f}, {paired.high:+.3f}], {decided.decision}"
    )
