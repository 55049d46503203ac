"""The learner's entry points for the main job and the CLI: plain functions of (ports, config), small by default."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bus_schemas.envelope import Event
from bus_schemas.events import EpisodeVerified, RoundStarted, scripted_rounds
from bus_schemas.events.tasks import TaskSpecified
from harness_service.config import HarnessConfig
from harness_service.runner.episode import Harness
from harness_service.skills.library import SkillLibrary
from infra.blobs.group_commit import GroupCommit
from infra.bootstrap import Ports
from infra.events import decodable, publish_all
from learner.care.controller import ControllerInputs, choose_schedule
from learner.care.history import recent_dev_overall, schedule_in_force
from learner.config import LearnerConfig, tiny_harness
from learner.dataset.augment import augment
from learner.dataset.build import MANIFEST_MEDIA_TYPE, DatasetBuild, Example, build_dataset
from learner.dataset.coldstart import seed_cold_start
from learner.dataset.episodes import read_log
from learner.dataset.harnesses import harness_resolver
from learner.eval.dev import DevReport, evaluate_dev, pick_tasks
from learner.model.factory import build_tiny_model, load_checkpoint, save_checkpoint
from learner.model.lora import with_lora
from learner.model.policy import PlannerPolicy
from learner.model.tokenizer import train_tokenizer
from learner.model.value_slots import SLOT_TOKENS
from learner.model.window import PromptWindow, turn_corpus
from learner.registry import ARTIFACT_PATH, PRODUCER, Lineage, promote_if_better, register_checkpoint
from learner.rl.frontier import frontier
from learner.rl.loop import RlState, RlStepReport, rollouts_digest, run_steps
from learner.rl.rollouts import Pump
from learner.sft.merge import ParentMerge
from learner.sft.trainer import SftResult, train_sft
from learner.tasks import template_tasks
from producers.backends.sandbox.skill_docs import SKILLS_DIR
from producers.tasks import build_task_suite

_log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""(done, total) for a progress bar."""


@dataclass(frozen=True)
class TrainOutcome:
    """A registered checkpoint and how it was made."""

    model_version: str
    checkpoint: Path
    dataset_digest: str
    metrics: dict[str, float]
    events: list[Event] = field(default_factory=list)
    """TrainingRunStarted, TrainingRunCompleted, ModelVersionRegistered (published unless ``publish=False``)."""


def skills() -> SkillLibrary:
    return SkillLibrary.from_dir(SKILLS_DIR)


def harness_version(config: LearnerConfig) -> str:
    return _label(config.harness)


def _label(harness: HarnessConfig) -> str:
    return Harness(config=harness, policy=None, blobs=None, events=None, skills=skills()).version  # type: ignore[arg-type]


def window(config: LearnerConfig) -> PromptWindow:
    return PromptWindow(
        max_prompt_tokens=config.max_prompt_tokens,
        max_new_tokens=config.max_new_tokens,
        goal_tokens=config.goal_tokens,
        system_tokens=config.system_tokens,
        copy_bias=config.copy_bias,
        constrained_actions=config.constrained_actions,
        chat_template=config.chat_template,
        native_tools=config.native_tools,
        value_slots=config.value_slots,
        word_slots=config.value_slots and config.word_slots,
    )


def train_tasks(config: LearnerConfig, run_id: str) -> list[TaskSpecified]:
    """The train split of the first ``cold_start_seeds`` suites, limited to the configured categories/difficulty."""
    return template_tasks(
        run_id,
        range(config.cold_start_seeds),
        "train",
        lambda t: t.category in config.train_categories and t.difficulty <= config.max_difficulty,
    )


def dev_tasks(config: LearnerConfig, run_id: str) -> list[TaskSpecified]:
    return pick_tasks(build_task_suite(run_id, seed=0), per_category=config.dev_per_category)


def test_tasks(config: LearnerConfig, run_id: str) -> list[TaskSpecified]:
    """The test split, sliced like dev: the final, unbiased figure (dev drives promotion)."""
    return pick_tasks(build_task_suite(run_id, seed=0), split="test", per_category=config.dev_per_category)


def seed_reference_episodes(
    ports: Ports, config: LearnerConfig, *, run_id: str, progress: Progress | None = None
) -> int:
    """Cold-start data: reference-solver episodes of the train tasks, published with their verdicts."""
    tasks = train_tasks(config, run_id)
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], len(tasks))

    return seed_cold_start(ports, tasks, config.harness, skills(), run_id=run_id, progress=tick)


def current_dataset(ports: Ports, config: LearnerConfig) -> DatasetBuild:
    """Admitted (or, before any curation, verified) episodes of any harness version found, re-rendered and checked.

    Our own harness, the tiny model's and the built-in default (what rollout workers run for ``default``) are known;
    revised
    versions (``name/N``) are loaded from the registry.
    """
    log = read_log(ports.bus)
    known = {
        _label(harness): harness for harness in (HarnessConfig(), tiny_harness(), config.harness)
    }  # the defaults of `flywheel train seed` (tiny) and of rollout workers, and the learner's own
    resolve = harness_resolver(known, ports.registry)
    return build_dataset(
        log,
        resolve,
        skills(),
        ports.blobs.get,
        self_weight=config.self_weight,
        self_share=config.self_share,
        with_tools=config.native_tools,
    )


def _training_rows(config: LearnerConfig, data: DatasetBuild) -> list[Example]:
    """The dataset's examples plus ``config.value_swaps`` value-swapped copies of each (see dataset.augment)."""
    return [*data.examples, *augment(data.examples, config.value_swaps, seed=config.sft.seed)]


def _fresh_model(config: LearnerConfig, data: DatasetBuild) -> tuple[Any, Any, PromptWindow]:
    if config.base_checkpoint is not None:
        model, tokenizer = load_checkpoint(config.base_checkpoint)
        if config.chat_template and not getattr(tokenizer, "chat_template", None):
            raise ValueError(
                f"{config.base_checkpoint} has no chat template (chat_template.jinja or tokenizer_config.json): "
                "a base model is prompted with its own template"
            )
        return model, tokenizer, window(config)
    tokenizer = planner_tokenizer(config, _training_rows(config, data))
    return build_tiny_model(tokenizer, config.tiny), tokenizer, window(config)


def planner_tokenizer(config: LearnerConfig, examples: Iterable[Example]) -> Any:
    """The tiny model's BPE, trained on the examples' turns, with the value slot tokens when ``value_slots``."""
    return train_tokenizer(
        turn_corpus(e.prompt + e.completion for e in examples),
        config.vocab_size,
        SLOT_TOKENS if config.value_slots else (),
    )


def _continued_model(ports: Ports, config: LearnerConfig, version: str) -> tuple[Any, Any, PromptWindow]:
    """A registered version with the tokenizer and window it was trained with."""
    model, tokenizer, local = load_version(ports, config, version)
    return model, tokenizer, PromptWindow.load(local)


def run_sft(
    ports: Ports,
    config: LearnerConfig,
    *,
    run_id: str,
    round: int = 0,
    progress: Progress | None = None,
    base_version: str | None = None,
    max_steps: int | None = None,
    time_budget_s: float | None = None,
    publish: bool = True,
    request_id: str | None = None,
) -> TrainOutcome:
    """SFT on the current dataset; registers the checkpoint as ``@candidate`` and publishes lineage.

    ``base_version`` continues from that registered version (its tokenizer and window, ``config.continued_sft``
    settings, lineage parent); otherwise a fresh model (``config.sft``). With ``config.schedule_rounds``, either
    trains ``round``'s span of the loop's one schedule (``LearnerConfig.sft_settings``). ``max_steps`` overrides the
    settings' step count; ``time_budget_s`` stops training early once that much wall time has passed.
    ``request_id`` (the TrainingRequested answered) tags the version, so a redelivered request reuses it
    (``registered_for_request``).
    """
    data = current_dataset(ports, config)
    if not data.examples:
        raise ValueError("no trainable episodes in the log: seed the cold start first (flywheel train seed)")
    if base_version is None:
        model, tokenizer, prompt_window = _fresh_model(config, data)
    else:
        model, tokenizer, prompt_window = _continued_model(ports, config, base_version)
    settings = config.sft_settings(round, continued=base_version is not None)
    if max_steps is not None:
        settings = settings.model_copy(update={"max_steps": max_steps})
    merge = ParentMerge.of(model, config.parent_merge) if base_version is not None and config.parent_merge else None
    target = config.work_dir / f"sft-{run_id}-r{round}"
    result: SftResult = train_sft(
        model,
        tokenizer,
        _training_rows(config, data),
        target,
        settings=settings,
        window=prompt_window,
        on_step=progress,
        time_budget_s=time_budget_s,
        lora=config.lora,
        merge=merge,
    )
    lineage = Lineage(
        model_name=config.model_name,
        algorithm="sft",
        dataset_digest=data.digest,
        dataset_manifest=ports.blobs.put(data.manifest(), MANIFEST_MEDIA_TYPE),
        source_offsets=data.offsets,
        harness_version=harness_version(config),
        parent_version=base_version,
        params={
            **settings.model_dump(),
            "examples": len(data.examples),
            "value_swaps": config.value_swaps,
            "max_prompt_tokens": prompt_window.max_prompt_tokens,
            "goal_tokens": prompt_window.goal_tokens,
            "system_tokens": prompt_window.system_tokens,
            "examples_self": data.self_examples,
            "wasted_self_turns": data.wasted_self_turns,
            "self_weight": config.self_weight,
            "self_share": config.self_share,
            "self_multiplier": data.self_multiplier,
            **({} if merge is None else {"parent_merge": merge.weight}),
            **({} if time_budget_s is None else {"time_budget_s": time_budget_s}),
        },
        metrics={
            **result.metrics(),
            "train_examples": float(len(data.examples)),
            "train_examples_self": float(data.self_examples),
        },
        steps=result.steps,
        wall_time_s=result.wall_time_s,
        history=result.history,
        dataset_profile={"examples": len(data.examples), "examples_self": data.self_examples},
        dataset_file=export_examples(data, config.work_dir / f"sft-{run_id}-r{round}-dataset"),
    )
    version, events = register_checkpoint(
        ports.registry, ports.blobs, target, lineage, run_id=run_id, round=round, request_id=request_id
    )
    if publish:
        publish_all(ports.bus, events)
    return TrainOutcome(version.version, target, data.digest, lineage.metrics, events)


def export_examples(data: DatasetBuild, folder: Path) -> Path:
    """The training set's rows (one per example: episode, task, step, category, prompt, completion, weight) as
    ``folder/train.parquet``: the source file of the run's dataset input. Beside the checkpoint, not in it (the
    checkpoint is shipped whole); written with pyarrow, without the datasets library's progress bar."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "train.parquet"
    pq.write_table(pa.Table.from_pylist([dict(e.__dict__) for e in data.examples]), path)
    return path


def load_version(ports: Ports, config: LearnerConfig, version: str) -> tuple[Any, Any, Path]:
    """(model, tokenizer, local dir) of ``model_name/version`` from the registry."""
    ref = ports.registry.resolve(f"{config.model_name}/{version}")
    if ref.run_id is None:
        raise ValueError(f"{config.model_name}/{version} has no training run to download from")
    local = ports.registry.download_artifacts(ref.run_id, ARTIFACT_PATH, config.work_dir / f"v{version}")
    model, tokenizer = load_checkpoint(local)
    return model, tokenizer, local


def run_eval(
    ports: Ports,
    config: LearnerConfig,
    version: str,
    *,
    run_id: str,
    round: int | None = None,
    progress: Progress | None = None,
) -> tuple[DevReport, bool]:
    """Evaluate ``version`` on the dev split, publish DevSetEvaluated, promote to ``@production`` if better."""
    model, tokenizer, local = load_version(ports, config, version)
    policy = PlannerPolicy(model, tokenizer, name=f"{config.model_name}/{version}", window=PromptWindow.load(local))
    tasks = dev_tasks(config, run_id)
    done = [0]
    blobs = GroupCommit(ports.blobs)  # each episode's blobs: durable together, just before its events are published

    def publish(events: Sequence[Event]) -> None:
        blobs.sync()
        publish_all(ports.bus, list(events))

    def tick() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], len(tasks))

    report = evaluate_dev(
        policy,
        tasks,
        config=config.harness,
        skills=skills(),
        blobs=blobs,
        publish=publish,
        run_id=run_id,
        model_name=config.model_name,
        model_version=version,
        round=round,
        on_task=tick,
    )
    promoted = promote_if_better(ports.registry, report.evaluated, require_approval=config.require_approval)
    return report, promoted


def rl_harness_version(ports: Ports, config: LearnerConfig, run_id: str, round: int) -> str:
    """The harness version RL rollouts run under: the round's (RoundStarted), else the harness's production alias."""
    from bus_schemas.topics import TOPIC_ROUNDS

    if TOPIC_ROUNDS in ports.bus.topics():
        for event in decodable(ports.bus.replay(TOPIC_ROUNDS)):
            if isinstance(event, RoundStarted) and event.run_id == run_id and event.round == round:
                return event.harness_version
    production = f"{config.harness.name}@production"
    try:
        ports.registry.resolve(production)
        return production
    except LookupError:  # outside a run: register the learner's harness so workers render what it trains on
        from harness_service.versions import publish_harness_version

        published = publish_harness_version(
            ports.registry, ports.blobs, config.harness, producer=PRODUCER, run_id=run_id, aliases=(), round=round
        )
        publish_all(ports.bus, [published])
        return published.harness_version


def rl_tasks(ports: Ports, config: LearnerConfig, run_id: str) -> list[TaskSpecified]:
    """The run's train tasks on the ``tasks`` topic (constructed ones included, retired ones not); without any,
    ``train_tasks`` is published first so the rollout workers can find them."""
    from bus_schemas.events import TaskRetired
    from bus_schemas.topics import TOPIC_TASKS

    tasks: dict[str, TaskSpecified] = {}
    if TOPIC_TASKS in ports.bus.topics():
        for event in decodable(ports.bus.replay(TOPIC_TASKS)):
            if isinstance(event, TaskSpecified) and event.run_id == run_id and event.split == "train":
                tasks[event.task_id] = event
            elif isinstance(event, TaskRetired):
                tasks.pop(event.task_id, None)
    if tasks:
        return sorted(tasks.values(), key=lambda t: t.task_id)
    pool = train_tasks(config, run_id)
    publish_all(ports.bus, pool)
    return pool


def own_verdicts(ports: Ports, run_id: str) -> list[EpisodeVerified]:
    """The run's verdicts on the model's episodes: rounds rolled out by a scripted policy (the cold start) excluded."""
    from bus_schemas.topics import TOPIC_ROUNDS, TOPIC_VERDICTS

    topics = ports.bus.topics()
    if TOPIC_VERDICTS not in topics:
        return []
    rounds = decodable(ports.bus.replay(TOPIC_ROUNDS)) if TOPIC_ROUNDS in topics else []
    scripted = scripted_rounds(e for e in rounds if e.run_id == run_id)
    return [
        e
        for e in decodable(ports.bus.replay(TOPIC_VERDICTS))
        if isinstance(e, EpisodeVerified) and e.run_id == run_id and e.round not in scripted
    ]


def rl_history(reports: Sequence[RlStepReport], first_step: int = 1) -> list[tuple[int, dict[str, float]]]:
    """Each GRPO step's figures at its step number: reward (mean, std), success, loss, KL, clipping, staleness,
    tokens, and the CARE reward's schedule (its index in ``SCHEDULES``, cost weight, partial credit), mean cost
    penalty charged and mean competence gate."""
    from learner.care.schedules import SCHEDULES

    index = {s.name: float(i) for i, s in enumerate(SCHEDULES)}
    return [
        (
            first_step + i,
            {
                "rl_mean_reward": r.mean_reward,
                "rl_reward_std": r.reward_std,
                "rl_success_rate": r.success_rate,
                "rl_loss": r.loss,
                "rl_kl": r.kl,
                "rl_clip_fraction": r.clip_fraction,
                "rl_abs_log_ratio": r.mean_abs_log_ratio,
                "rl_staleness": r.staleness,
                "rl_samples": float(r.samples),
                "rl_tokens": float(r.tokens),
                "rl_care_penalty": r.care_penalty,
                "rl_care_gate": r.care_gate,
                "rl_care_cost_weight": r.care_cost_weight,
                "rl_care_partial_credit": r.care_partial_credit,
                **({"rl_care_schedule": index[r.care_schedule]} if r.care_schedule in index else {}),
            },
        )
        for i, r in enumerate(reports)
    ]


def run_rl(
    ports: Ports,
    config: LearnerConfig,
    version: str,
    *,
    steps: int,
    run_id: str,
    round: int = 0,
    progress: Progress | None = None,
    publish: bool = True,
    pump: Pump | None = None,
    sft_steps: int = 0,
    request_id: str | None = None,
) -> tuple[TrainOutcome, list[RlStepReport]]:
    """``steps`` GRPO steps from ``version`` on rollouts through the bus; registers the result with ``version`` as
    parent.

    ``sft_steps > 0`` is the mixed schedule: continued SFT on the admitted data first, then GRPO with CARE from
    that model, registered once. ``pump`` lets in-process services run while the learner waits for rollouts.
    """
    model, tokenizer, local = load_version(ports, config, version)
    prompt_window = PromptWindow.load(local)
    total = sft_steps + steps
    sft_digest, sft_metrics = "", {}
    history: list[tuple[int, dict[str, float]]] = []
    if sft_steps > 0:
        data = current_dataset(ports, config)
        if data.examples:
            settings = config.continued_sft.model_copy(update={"max_steps": sft_steps})
            sft = train_sft(
                model,
                tokenizer,
                _training_rows(config, data),
                config.work_dir / f"sft-{run_id}-r{round}",
                settings=settings,
                window=prompt_window,
                on_step=progress,
                lora=config.lora,
            )
            sft_digest = data.digest
            history.extend((step, {f"sft_{k}": v for k, v in values.items()}) for step, values in sft.history)
            sft_metrics = {
                "sft_steps": float(sft.steps),
                "sft_loss": sft.metrics().get("train_loss", 0.0),
                "train_examples": float(len(data.examples)),
                "train_examples_self": float(getattr(data, "self_examples", 0)),
            }
    schedule = schedule_in_force(ports.bus, config.model_name)
    state = RlState(
        model if config.lora is None else with_lora(model, config.lora),
        tokenizer,
        checkpoints=config.work_dir / f"rl-{run_id}-r{round}-steps",
        model_name=config.model_name,
        window=prompt_window,
        schedule=schedule,
    )
    done = [sft_steps]

    def tick(_report: RlStepReport) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    pool = rl_tasks(ports, config, run_id)
    focus_metrics: dict[str, float] = {}
    if config.rl.focus == "frontier":
        focus = frontier(pool, own_verdicts(ports, run_id))
        _log.info(
            "rl frontier: %d of %d train tasks in %d template(s)%s",
            len(focus.tasks),
            len(pool),
            len(focus.templates),
            " (none yet: the whole pool)" if focus.fallback else "",
        )
        pool = focus.tasks
        focus_metrics = {"rl_frontier_tasks": float(0 if focus.fallback else len(focus.tasks))}
    reports, episodes = run_steps(
        state,
        ports,
        pool,
        steps=steps,
        harness_version=rl_harness_version(ports, config, run_id, round),
        settings=config.rl,
        run_id=run_id,
        round=round,
        pump=pump,
        on_step=tick,
    )
    dev, previous = recent_dev_overall(ports.bus, config.model_name)
    n = max(1, len(reports))
    success = sum(r.success_rate for r in reports) / n
    inputs = ControllerInputs(
        train_success=success, dev_overall=dev, previous_dev_overall=previous, competence=state.competence
    )
    _, choice = choose_schedule(inputs, schedule, model_name=config.model_name, run_id=run_id, producer=PRODUCER)
    chosen = choice.model_copy(update={"round": round})
    if publish:
        publish_all(ports.bus, [chosen])
    target = save_checkpoint(state.model, tokenizer, config.work_dir / f"rl-{run_id}-r{round}")
    state.window.save(target)
    metrics = {
        **sft_metrics,
        **focus_metrics,
        "rl_steps": float(len(reports)),
        "rl_episodes": float(sum(r.episodes for r in reports)),
        "rl_success_rate": success,
        "rl_mean_reward": sum(r.mean_reward for r in reports) / n,
        "rl_samples": float(sum(r.samples for r in reports)),
        "rl_staleness": sum(r.staleness for r in reports) / n,
        "rl_abs_log_ratio": sum(r.mean_abs_log_ratio for r in reports) / n,
        "rl_clip_fraction": sum(r.clip_fraction for r in reports) / n,
    }
    digest, manifest = rollouts_digest(episodes, sft_digest)
    lineage = Lineage(
        model_name=config.model_name,
        algorithm="rl",
        dataset_digest=digest,
        dataset_manifest=ports.blobs.put(manifest, "text/plain"),
        source_offsets={
            f"{t}/{p}": end for t in ("episodes", "verdicts") for p, end in ports.bus.end_offsets(t).items()
        },
        harness_version=harness_version(config),
        parent_version=version,
        params={
            **config.rl.model_dump(mode="json"),
            "steps": steps,
            "sft_steps": sft_steps,
            "care_schedule": schedule.name,
            "care_schedule_next": chosen.schedule,
        },
        metrics=metrics,
        steps=sft_steps + len(reports),
        wall_time_s=sum(r.rollout_s + r.scoring_s + r.update_s for r in reports),
        history=(*history, *rl_history(reports, first_step=sft_steps + 1)),
        dataset_profile={"episodes": len(episodes), "rl_samples": int(metrics["rl_samples"])},
    )
    ref, events = register_checkpoint(
        ports.registry,
        ports.blobs,
        target,
        lineage,
        run_id=run_id,
        round=round,
        request_id=request_id,
        companions=[chosen],
    )
    if publish:
        publish_all(ports.bus, events)
    return TrainOutcome(ref.version, target, digest, metrics, [chosen, *events]), reports
