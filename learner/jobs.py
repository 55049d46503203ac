"""The learner's entry points for the main job and the CLI: plain functions of (ports, config), small by default."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bus_schemas.events.tasks import TaskSpecified
from harness_service.runner.episode import Harness
from harness_service.skills.library import SkillLibrary
from infra.bootstrap import Ports
from infra.events import publish_all
from learner.care.controller import ControllerInputs, choose_schedule
from learner.care.history import recent_dev_overall, schedule_in_force
from learner.config import LearnerConfig
from learner.dataset.build import MANIFEST_MEDIA_TYPE, DatasetBuild, build_dataset
from learner.dataset.coldstart import seed_cold_start
from learner.dataset.episodes import read_log
from learner.eval.dev import DevReport, evaluate_dev, pick_tasks
from learner.model.factory import build_tiny_model, load_checkpoint, save_checkpoint
from learner.model.policy import PlannerPolicy, PromptWindow
from learner.model.tokenizer import train_tokenizer
from learner.registry import ARTIFACT_PATH, PRODUCER, Lineage, promote_if_better, register_checkpoint
from learner.rl.loop import RlState, RlStepReport, rl_step
from learner.sft.trainer import SftResult, train_sft
from learner.tasks import template_tasks
from producers.backends.sandbox.skill_docs import SKILLS_DIR
from producers.tasks import build_task_suite

Progress = Callable[[int, int], None]
"""(done, total) for a progress bar."""


@dataclass(frozen=True)
class TrainOutcome:
    """A registered checkpoint and how it was made."""

    model_version: str
    checkpoint: Path
    dataset_digest: str
    metrics: dict[str, float]


def skills() -> SkillLibrary:
    return SkillLibrary.from_dir(SKILLS_DIR)


def harness_version(config: LearnerConfig) -> str:
    return Harness(config=config.harness, policy=None, blobs=None, events=None, skills=skills()).version  # type: ignore[arg-type]


def window(config: LearnerConfig) -> PromptWindow:
    return PromptWindow(config.max_prompt_tokens, config.max_new_tokens)


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


def seed_reference_episodes(ports: Ports, config: LearnerConfig, *, run_id: str, progress: Progress | None = None) -> int:
    """Cold-start data: reference-solver episodes of the train tasks, published with their verdicts."""
    tasks = train_tasks(config, run_id)
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], len(tasks))

    return seed_cold_start(ports, tasks, config.harness, skills(), run_id=run_id, progress=tick)


def current_dataset(ports: Ports, config: LearnerConfig) -> DatasetBuild:
    """Admitted (or, before any curation, verified) episodes of our harness version, re-rendered and checked."""
    log = read_log(ports.bus)
    return build_dataset(log, {harness_version(config): config.harness}, skills(), ports.blobs.get)


def _fresh_model(config: LearnerConfig, data: DatasetBuild) -> tuple[Any, Any]:
    if config.base_checkpoint is not None:
        return load_checkpoint(config.base_checkpoint)
    tokenizer = train_tokenizer((e.prompt + e.completion for e in data.examples), config.vocab_size)
    return build_tiny_model(tokenizer, config.tiny), tokenizer


def run_sft(
    ports: Ports, config: LearnerConfig, *, run_id: str, round: int = 0, progress: Progress | None = None
) -> TrainOutcome:
    """Cold-start SFT on the current dataset; registers the checkpoint as ``@candidate`` and publishes lineage."""
    data = current_dataset(ports, config)
    if not data.examples:
        raise ValueError("no trainable episodes in the log: seed the cold start first (flywheel train seed)")
    model, tokenizer = _fresh_model(config, data)
    target = config.work_dir / f"sft-{run_id}-r{round}"
    result: SftResult = train_sft(
        model, tokenizer, data.examples, target, settings=config.sft, window=window(config), on_step=progress
    )
    lineage = Lineage(
        model_name=config.model_name,
        algorithm="sft",
        dataset_digest=data.digest,
        dataset_manifest=ports.blobs.put(data.manifest(), MANIFEST_MEDIA_TYPE),
        source_offsets=data.offsets,
        harness_version=harness_version(config),
        parent_version=None,
        params={**config.sft.model_dump(), "examples": len(data.examples), "max_prompt_tokens": config.max_prompt_tokens},
        metrics=result.metrics(),
        steps=result.steps,
        wall_time_s=result.wall_time_s,
    )
    version, events = register_checkpoint(ports.registry, ports.blobs, target, lineage, run_id=run_id, round=round)
    publish_all(ports.bus, events)
    return TrainOutcome(version.version, target, data.digest, result.metrics())


def load_version(ports: Ports, config: LearnerConfig, version: str) -> tuple[Any, Any, Path]:
    """(model, tokenizer, local dir) of ``model_name/version`` from the registry."""
    ref = ports.registry.resolve(f"{config.model_name}/{version}")
    if ref.run_id is None:
        raise ValueError(f"{config.model_name}/{version} has no training run to download from")
    local = ports.registry.download_artifacts(ref.run_id, ARTIFACT_PATH, config.work_dir / f"v{version}")
    model, tokenizer = load_checkpoint(local)
    return model, tokenizer, local


def run_eval(
    ports: Ports, config: LearnerConfig, version: str, *, run_id: str, round: int | None = None,
    progress: Progress | None = None,
) -> tuple[DevReport, bool]:
    """Evaluate ``version`` on the dev split, publish DevSetEvaluated, promote to ``@production`` if better."""
    model, tokenizer, local = load_version(ports, config, version)
    policy = PlannerPolicy(model, tokenizer, name=f"{config.model_name}/{version}", window=PromptWindow.load(local))
    tasks = dev_tasks(config, run_id)
    done = [0]

    def tick() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], len(tasks))

    report = evaluate_dev(
        policy, tasks, config=config.harness, skills=skills(), blobs=ports.blobs,
        publish=lambda events: publish_all(ports.bus, list(events)), run_id=run_id,
        model_name=config.model_name, model_version=version, round=round, on_task=tick,
    )
    promoted = promote_if_better(ports.registry, report.evaluated, require_approval=config.require_approval)
    return report, promoted


def run_rl(
    ports: Ports, config: LearnerConfig, version: str, *, steps: int, run_id: str, round: int = 0,
    progress: Progress | None = None,
) -> tuple[TrainOutcome, list[RlStepReport]]:
    """``steps`` GRPO steps from ``version`` over bus rollouts; registers the result with ``version`` as parent."""
    model, tokenizer, local = load_version(ports, config, version)
    schedule = schedule_in_force(ports.bus, config.model_name)
    state = RlState(
        model, tokenizer, model_name=config.model_name, version=int(version), window=PromptWindow.load(local),
        schedule=schedule,
    )
    pool = train_tasks(config, run_id)
    reports = []
    per_step = config.rl.tasks_per_step
    for i in range(steps):
        batch = [pool[(i * per_step + k * 7919) % len(pool)] for k in range(per_step)]
        reports.append(
            rl_step(state, ports, batch, config=config.harness, skills=skills(), settings=config.rl, run_id=run_id,
                    round=round)
        )
        if progress is not None:
            progress(i + 1, steps)
    dev, previous = recent_dev_overall(ports.bus, config.model_name)
    success = sum(r.success_rate for r in reports) / max(1, len(reports))
    inputs = ControllerInputs(train_success=success, dev_overall=dev, previous_dev_overall=previous,
                              competence=state.competence)
    _, choice = choose_schedule(inputs, schedule, model_name=config.model_name, run_id=run_id, producer=PRODUCER)
    publish_all(ports.bus, [choice.model_copy(update={"round": round})])
    target = save_checkpoint(model, tokenizer, config.work_dir / f"rl-{run_id}-r{round}")
    state.window.save(target)
    metrics = {
        "rl_success_rate": sum(r.success_rate for r in reports) / max(1, len(reports)),
        "rl_mean_reward": sum(r.mean_reward for r in reports) / max(1, len(reports)),
        "rl_samples": float(sum(r.samples for r in reports)),
    }
    digest = "rollouts:" + ",".join(r.policy_version for r in reports)
    lineage = Lineage(
        model_name=config.model_name,
        algorithm="rl",
        dataset_digest=digest,
        dataset_manifest=ports.blobs.put(digest.encode(), "text/plain"),
        source_offsets={f"{t}/{p}": end for t in ("episodes", "verdicts") for p, end in ports.bus.end_offsets(t).items()},
        harness_version=harness_version(config),
        parent_version=version,
        params={**config.rl.model_dump(mode="json"), "steps": steps},
        metrics=metrics,
        steps=steps,
        wall_time_s=sum(r.rollout_s + r.scoring_s + r.update_s for r in reports),
    )
    ref, events = register_checkpoint(ports.registry, ports.blobs, target, lineage, run_id=run_id, round=round)
    publish_all(ports.bus, events)
    return TrainOutcome(ref.version, target, digest, metrics), reports
