"""The dataset re-renders every recorded context byte for byte and supervises only the model's own turns."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_service.config import HarnessConfig
from harness_service.context.messages import decode_context, encode_context, render_messages
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics
from learner.config import LearnerConfig, tiny_harness
from learner.dataset import build_dataset, read_log
from learner.dataset.build import Example
from learner.dataset.coldstart import seed_cold_start
from learner.dataset.tokenize import tokenize_example
from learner.jobs import harness_version, skills
from learner.model import PromptWindow, train_tokenizer
from producers.tasks import build_task_suite

pytestmark = pytest.mark.unit


def sample_tasks(per_category: int = 2):
    suite = [t for t in build_task_suite("run-dataset-test") if t.split == "train"]
    picked = []
    for category in ("tool_use", "memory", "skills", "sub_agent"):
        picked.extend([t for t in suite if t.category == category][:per_category])
    return picked


@pytest.fixture
def seeded(embedded_ports):
    config = LearnerConfig()
    passed = seed_cold_start(embedded_ports, sample_tasks(), config.harness, skills(), run_id="run-dataset-test")
    assert passed == 8
    return embedded_ports, config


def test_every_example_re_renders_the_recorded_context_byte_for_byte(seeded) -> None:
    ports, config = seeded
    log = read_log(ports.bus)
    build = build_dataset(log, {harness_version(config): config.harness}, skills(), ports.blobs.get)
    assert build.skipped == {}
    assert {e.category for e in build.examples} == {"tool_use", "memory", "skills", "sub_agent"}
    turns = {(r.episode_id, step) for r in log.episodes.values() for step in r.actions}
    assert {(e.episode_id, e.step) for e in build.examples} == turns  # sub-agent turns included
    for example in build.examples:
        recorded = ports.blobs.get(log.episodes[example.episode_id].contexts[example.step].context.sha256)
        assert example.prompt.encode() == render_messages(decode_context(recorded)).encode()
        assert encode_context(decode_context(recorded)) == recorded
        raw = log.episodes[example.episode_id].actions[example.step].raw_output
        assert raw is not None and example.completion.encode() == ports.blobs.get(raw.sha256)


def test_a_different_harness_under_the_same_version_label_is_caught_not_trained_on(seeded) -> None:
    ports, config = seeded
    log = read_log(ports.bus)
    impostor = HarnessConfig(name="tiny-planner", instructions="Something else entirely.")
    build = build_dataset(log, {harness_version(config): impostor}, skills(), ports.blobs.get)
    assert build.examples == []
    assert len(build.skipped) == 8 and all("differs from the recorded blob" in why for why in build.skipped.values())
    unknown = build_dataset(log, {}, skills(), ports.blobs.get)
    assert all("unknown harness version" in why for why in unknown.skipped.values())


def test_an_episode_is_re_rendered_on_the_backend_that_ran_it(seeded) -> None:
    """The recorded backend, not a hard-coded sandbox: one that needs live ports (a simulator) or is not installed
    cannot be re-created offline, so its episode is skipped with the reason; the others still build."""
    ports, config = seeded
    log = read_log(ports.bus)
    tops = sorted(e for e, r in log.episodes.items() if r.started.parent_episode_id is None)
    for episode_id, backend in zip(tops, ("llm_sim", "gone"), strict=False):
        record = log.episodes[episode_id]
        record.started = record.started.model_copy(update={"backend": backend})
    build = build_dataset(log, {harness_version(config): config.harness}, skills(), ports.blobs.get)
    assert set(build.skipped) == set(tops[:2])
    assert "cannot re-create backend 'llm_sim' offline: " in build.skipped[tops[0]]
    assert "cannot re-create backend 'gone' offline: no backend 'gone' is installed" in build.skipped[tops[1]]
    assert {e.episode_id for e in build.examples} >= set(tops[2:])


def test_digest_and_offsets_pin_the_data_and_parquet_round_trips(seeded, tmp_path: Path) -> None:
    ports, config = seeded
    configs = {harness_version(config): config.harness}
    first = build_dataset(read_log(ports.bus), configs, skills(), ports.blobs.get)
    again = build_dataset(read_log(ports.bus), configs, skills(), ports.blobs.get)
    assert first.digest == again.digest and first.digest.startswith("sha256:")
    assert (
        first.offsets["episodes/0"] >= 0 and sum(v for k, v in first.offsets.items() if k.startswith("episodes/")) > 0
    )
    assert first.harness_versions == [harness_version(config)]
    from datasets import Dataset

    table = Dataset.from_parquet(str(first.to_parquet(tmp_path / "d.parquet")))
    assert table["prompt"] == [e.prompt for e in first.examples]
    seed_cold_start(ports, sample_tasks(1)[:1], tiny_harness(), skills(), run_id="more", publish_tasks=False)
    assert build_dataset(read_log(ports.bus), configs, skills(), ports.blobs.get).digest != first.digest


def test_examples_come_in_an_order_that_does_not_depend_on_the_runs_episode_ids(seeded, tmp_path: Path) -> None:
    """The same demonstrations seeded again (fresh random episode ids, published in the reverse order) give the same
    examples in the same order, so the trainer's seeded shuffle sees the same data: the same draw trains alike."""
    ports, config = seeded
    configs = {harness_version(config): config.harness}
    first = build_dataset(read_log(ports.bus), configs, skills(), ports.blobs.get)
    again = Ports(
        bus=open_bus(f"sqlite:///{tmp_path}/again.db?session_timeout_s=1.5"),
        blobs=open_blob_store(f"file:///{tmp_path}/again-blobs"),
        registry=open_registry(f"sqlite:///{tmp_path}/again-mlflow.db"),
    )
    try:
        ensure_topics(again.bus)
        seed_cold_start(again, sample_tasks()[::-1], config.harness, skills(), run_id="run-dataset-test")
        second = build_dataset(read_log(again.bus), configs, skills(), again.blobs.get)
    finally:
        again.close()
    assert {e.episode_id for e in first.examples}.isdisjoint(e.episode_id for e in second.examples)
    same = [(e.task_id, e.step, e.prompt, e.completion) for e in first.examples]
    assert same == [(e.task_id, e.step, e.prompt, e.completion) for e in second.examples]
    assert [e.task_id for e in first.examples] == sorted(e.task_id for e in first.examples)


def test_loss_covers_only_the_models_output_and_its_end_token() -> None:
    prompt = "<|im_start|>user\nsay hi<|im_end|>\n" * 50
    completion = '<action>{"kind":"finish","answer":"hi"}</action>'
    tokenizer = train_tokenizer([prompt + completion], vocab_size=400)
    window = PromptWindow(max_prompt_tokens=64)
    row = tokenize_example(tokenizer, window, prompt, completion)
    supervised = [t for t, m in zip(row["input_ids"], row["completion_mask"], strict=True) if m]
    context = [t for t, m in zip(row["input_ids"], row["completion_mask"], strict=True) if not m]
    assert tokenizer.decode(supervised) == completion + "<|im_end|>"
    assert len(context) == 64 and tokenizer.decode(context).endswith("<|im_start|>assistant\n")


def test_undecodable_records_on_the_log_are_skipped_not_fatal(seeded) -> None:
    from infra.bus.records import OutgoingRecord

    ports, config = seeded
    clean = read_log(ports.bus)
    ports.bus.publish(OutgoingRecord("episodes", b'{"event_type": "EpisodeEnded", "schema_version": 99}', key=b"x"))
    log = read_log(ports.bus)
    assert set(log.episodes) == set(clean.episodes)
    assert sum(log.offsets.values()) == sum(clean.offsets.values()) + 1


def _as_models(log, episode_id: str, version: str = "planner/2") -> None:
    """Mark ``episode_id`` as produced by a model version (not the reference solver) in ``log``."""
    from dataclasses import replace

    record = log.episodes[episode_id]
    log.episodes[episode_id] = replace(record, started=record.started.model_copy(update={"policy_version": version}))


def test_self_weight_scales_only_the_models_own_episodes_and_their_sub_agents(seeded) -> None:
    ports, config = seeded
    log = read_log(ports.bus)
    delegating = [eid for eid, r in log.episodes.items() if r.started.parent_episode_id is None and log.children(eid)]
    own = sorted(delegating)[0]
    family = {own} | {child.episode_id for child in log.children(own)}
    _as_models(log, own)
    configs = {harness_version(config): config.harness}
    plain = build_dataset(log, configs, skills(), ports.blobs.get)
    weighted = build_dataset(log, configs, skills(), ports.blobs.get, self_weight=4.0)
    assert len(family) == 2 and plain.model_episodes == weighted.model_episodes == family
    counted = sum(e.episode_id in family for e in plain.examples)
    assert counted > sum(e.episode_id == own for e in plain.examples)  # the sub-agent's turns are the model's too
    assert weighted.self_examples == plain.self_examples == counted
    for before, after in zip(plain.examples, weighted.examples, strict=True):
        assert after.weight == before.weight * (4.0 if before.episode_id in family else 1.0)
    assert weighted.digest != plain.digest  # the weights are part of what the digest pins


def test_self_share_lowers_the_multiplier_where_the_own_rows_would_be_more_than_that_share(seeded) -> None:
    ports, config = seeded
    log = read_log(ports.bus)
    top = sorted(eid for eid, r in log.episodes.items() if r.started.parent_episode_id is None)
    for episode_id in top[: len(top) // 3]:
        _as_models(log, episode_id)
    configs = {harness_version(config): config.harness}
    plain = build_dataset(log, configs, skills(), ports.blobs.get)
    own = [e.episode_id in plain.model_episodes for e in plain.examples]
    own_rows = sum(e.repeats for e, o in zip(plain.examples, own, strict=True) if o)
    other_rows = sum(e.repeats for e, o in zip(plain.examples, own, strict=True) if not o)
    assert 0 < own_rows < other_rows
    capped = build_dataset(log, configs, skills(), ports.blobs.get, self_weight=8.0, self_share=0.6)
    expected = 0.6 / 0.4 * other_rows / own_rows
    assert 1.0 < expected < 8.0 and capped.self_multiplier == pytest.approx(expected)
    for before, after, o in zip(plain.examples, capped.examples, own, strict=True):
        assert after.weight == pytest.approx(before.weight * (expected if o else 1.0))
    uncapped = build_dataset(log, configs, skills(), ports.blobs.get, self_weight=8.0, self_share=0.95)
    assert uncapped.self_multiplier == 8.0  # the share is not reached at 8: the weight stays


@pytest.mark.parametrize(
    ("own", "other", "weight", "share", "expected"),
    [
        (30, 3179, 8.0, 0.1, 8.0),  # few own rows: the weight as it is
        (202, 3179, 8.0, 0.1, 0.1 / 0.9 * 3179 / 202),
        (400, 3179, 8.0, 0.1, 1.0),  # never below 1: an own example counts at least as a demonstration
        (400, 3179, 8.0, None, 8.0),
        (0, 3179, 8.0, 0.1, 8.0),
        (12, 0, 8.0, 0.1, 8.0),
    ],
)
def test_own_multiplier(own, other, weight, share, expected) -> None:
    from learner.dataset.build import own_multiplier

    assert own_multiplier(own, other, weight, share) == pytest.approx(expected)


def test_the_models_own_detours_are_not_trained_on_but_stay_in_the_prompts(embedded_ports) -> None:
    """A model's verified success that searched an unknown name (nothing found), repeated that search and asked for
    a contact that does not exist before doing the task: only its turns that moved the episode forward become
    examples; the reference solver's episodes keep every turn."""
    from bus_schemas.actions import ToolCall
    from harness_service.policy.scripted import ScriptedPolicy
    from harness_service.runner.episode import Harness, RunIds
    from infra.events import publish_all
    from learner.episodes import run_judged_episode
    from producers.backends import plugins
    from producers.tasks.solver import reference_solver

    config = LearnerConfig()
    task = sample_tasks()[0]  # tu.update_phone: contacts tools

    def with_detours():
        yield ToolCall(name="contacts.search_contacts", args={"query": "Nobody Known"})
        yield ToolCall(name="contacts.search_contacts", args={"query": "Nobody Known"})
        yield ToolCall(name="contacts.get_contact", args={"id": "c_999"})
        yield from reference_solver(task)

    publish_all(embedded_ports.bus, [task])
    ids = {}
    for name, solver in (("model", with_detours()), ("reference", reference_solver(task))):
        harness = Harness(
            config=config.harness,
            policy=ScriptedPolicy(solver, "reference"),
            blobs=embedded_ports.blobs,
            events=lambda e: None,
            skills=skills(),
        )
        judged = run_judged_episode(harness, task, plugins.Backends()[task.backend], RunIds(run_id="r", round=1))
        assert judged.verdict.outcome == "success"
        publish_all(embedded_ports.bus, judged.events)
        ids[name] = judged.outcome.episode_id
    log = read_log(embedded_ports.bus)
    _as_models(log, ids["model"])
    build = build_dataset(log, {harness_version(config): config.harness}, skills(), embedded_ports.blobs.get)
    steps = {name: [e.step for e in build.examples if e.episode_id == eid] for name, eid in ids.items()}
    reference_turns = len(log.episodes[ids["reference"]].actions)
    assert steps["reference"] == list(range(1, reference_turns + 1))
    assert steps["model"] == [s + 3 for s in steps["reference"]]  # the three detours (steps 1-3) are left out
    assert build.wasted_self_turns == 3 and build.self_examples == reference_turns
    first = next(e for e in build.examples if e.episode_id == ids["model"])
    assert first.prompt.count("Nobody Known") == 2 and "c_999" in first.prompt  # what the model saw, unchanged


@pytest.mark.parametrize(("weight", "repeats"), [(0.2, 1), (1.0, 1), (1.4, 1), (2.6, 3), (8.0, 8)])
def test_an_example_becomes_its_weight_in_rows_rounded_and_at_least_one(weight: float, repeats: int) -> None:
    assert Example("ep", "task", 1, "memory", "prompt", "completion", weight).repeats == repeats
