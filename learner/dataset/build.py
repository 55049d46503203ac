"""Selects trainable episodes, weights them by curation and the latest sampling plan, and pins the result by digest."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import orjson

from bus_schemas.actions import SAFETY_CODES
from bus_schemas.events import is_scripted
from harness_service.actions.native import function_tools
from harness_service.config import HarnessConfig
from harness_service.context.messages import render_messages
from harness_service.skills.library import SkillLibrary
from learner.dataset.episodes import EpisodeLog
from learner.dataset.harnesses import HarnessResolver
from learner.dataset.render import BlobReader, RenderedStep, RenderMismatch, rerender_episode

MANIFEST_MEDIA_TYPE = "application/vnd.flywheel.dataset+json"
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Example:
    """One supervised turn: ``prompt`` is the exact ChatML text the model saw, ``completion`` what it wrote."""

    episode_id: str
    task_id: str
    step: int
    category: str
    prompt: str
    completion: str
    weight: float
    tools: str = ""
    """The step's tools as the JSON array of OpenAI function schemas (``actions.native.function_tools``) a
    tool-calling window renders with the prompt; empty unless the build was asked for them (``with_tools``)."""

    def functions(self) -> list[dict[str, object]]:
        return orjson.loads(self.tools) if self.tools else []

    @property
    def repeats(self) -> int:
        """How many training rows the example becomes: its weight as repetition, rounded, at least once."""
        return max(1, round(self.weight))


@dataclass
class DatasetBuild:
    """The examples, the episodes skipped (with why), and the lineage: digest and input offsets."""

    examples: list[Example]
    skipped: dict[str, str] = field(default_factory=dict)
    offsets: dict[str, int] = field(default_factory=dict)
    harness_versions: list[str] = field(default_factory=list)
    model_episodes: set[str] = field(default_factory=set)
    """Selected episodes the model produced (not a scripted policy such as the reference solver), with the
    sub-agent episodes they spawned (the model played those too)."""
    self_multiplier: float = 1.0
    """What the own examples' weights were multiplied by (``own_multiplier``)."""
    wasted_self_turns: int = 0
    """Valid turns of the model's own episodes left out because they moved nothing forward (``wasted_turns``)."""

    @property
    def self_examples(self) -> int:
        """Examples from the model's own episodes: what the loop learns from its own experience."""
        return sum(e.episode_id in self.model_episodes for e in self.examples)

    def manifest(self) -> bytes:
        """Canonical JSON of every example and the offsets read; its sha256 is the dataset digest."""
        rows = [e.__dict__ for e in self.examples]
        return orjson.dumps(
            {"examples": rows, "offsets": self.offsets, "harness_versions": self.harness_versions},
            option=orjson.OPT_SORT_KEYS,
        )

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.manifest()).hexdigest()

    def to_hf(self):  # noqa: ANN201 (datasets.Dataset; imported lazily)
        from datasets import Dataset

        return Dataset.from_list([e.__dict__ for e in self.examples])

    def to_parquet(self, path: Path) -> Path:
        self.to_hf().to_parquet(str(path))
        return path


def _selected(log: EpisodeLog) -> dict[str, float]:
    """Curated episodes with their weight; without any curation yet (cold start), verified successes at 1.0."""
    if log.admitted:
        return {eid: admitted.weight for eid, admitted in log.admitted.items()}
    return {eid: 1.0 for eid, verdict in log.verdicts.items() if verdict.outcome == "success"}


def _canonical(log: EpisodeLog, episode_id: str) -> tuple[str, str, int, str]:
    """Examples in an order that does not depend on the run: by task, producing policy, rollout seed, then id
    (episode ids are random per run; ordered by them, the same draw trained in a different order each run and the
    cold start of one seed scored dev 0.000 in one run and 0.081 in the next)."""
    record = log.episodes.get(episode_id)
    if record is None:
        return ("", "", 0, episode_id)
    return (record.started.task_id, record.started.policy_version, record.started.seed, episode_id)


def wasted_turns(steps: list[RenderedStep]) -> set[tuple[str, int]]:
    """The (episode, step) of turns that moved nothing forward: the tool failed (except at a safety gate, where
    failing first and recovering is what a demonstration shows), the output repeats an earlier one of the same
    (sub-)episode word for word, or the action returned nothing and changed nothing.

    Left out of the model's own successes: the success admits the episode, not every detour on the way (a model
    that searched an unrelated name before the right one would otherwise be taught the unrelated search). The
    turns stay in the later prompts, which show what the model saw."""
    wasted, seen = set(), set()
    for s in steps:
        obs = s.observation
        if (s.episode_id, s.output) in seen:
            wasted.add((s.episode_id, s.step))
        elif obs is not None and (
            (obs.error is not None and obs.error.code not in SAFETY_CODES)
            or (obs.error is None and not obs.changes and not obs.flags and obs.result in (None, [], {}, ""))
        ):
            wasted.add((s.episode_id, s.step))
        seen.add((s.episode_id, s.output))
    return wasted


def _plan_weight(log: EpisodeLog, task_id: str) -> float:
    plan, task = log.plan, log.tasks.get(task_id)
    if plan is None or task is None:
        return 1.0
    return plan.task_weights.get(task_id, 1.0) * plan.category_weights.get(task.category, 1.0)


def build_dataset(
    log: EpisodeLog,
    configs: Mapping[str, HarnessConfig] | HarnessResolver,
    skills: SkillLibrary,
    read: BlobReader,
    *,
    self_weight: float = 1.0,
    self_share: float | None = None,
    with_tools: bool = False,
) -> DatasetBuild:
    """Every model turn of the selected top-level episodes, re-rendered and verified byte for byte.

    ``self_weight`` multiplies the weight of the model's own episodes (not a scripted policy's): the loop's new
    evidence against the cold start's demonstrations. ``self_share`` caps that multiplier where the own examples
    would make up more than this share of the trained rows (``own_multiplier``).

    ``with_tools``: each example also keeps its step's tools (``Example.tools``), for a window that renders them
    (``PromptWindow.native_tools``).

    ``configs`` maps a harness version (as recorded in EpisodeStarted) to its config, as a mapping or a
    resolver; episodes of an unknown version, or whose replay differs from the record, are skipped with
    the reason logged.
    """
    resolve = configs.get if isinstance(configs, Mapping) else configs
    build = DatasetBuild(examples=[], offsets=dict(log.offsets))
    versions: set[str] = set()
    selected = _selected(log)
    for episode_id in sorted(selected, key=lambda eid: _canonical(log, eid)):
        weight = selected[episode_id]
        record = log.episodes.get(episode_id)
        if record is None or record.started.parent_episode_id is not None:
            continue
        task = log.tasks.get(record.started.task_id)
        if task is None or task.split != "train":  # dev and test episodes are judged and curated, never trained on
            build.skipped[episode_id] = f"task {record.started.task_id} is not in the train split"
            continue
        config = resolve(record.started.harness_version)
        if config is None:
            build.skipped[episode_id] = f"unknown harness version {record.started.harness_version}"
            continue
        try:
            steps = rerender_episode(log, episode_id, config, skills, read)
        except RenderMismatch as exc:
            build.skipped[episode_id] = str(exc)
            _log.warning("dataset: skipping %s", exc)
            continue
        versions.add(record.started.harness_version)
        own = not is_scripted(record.started.policy_version)
        wasted: set[tuple[str, int]] = set()
        if own:
            build.model_episodes.update(s.episode_id for s in steps)
            wasted = wasted_turns(steps)
            build.wasted_self_turns += sum(s.valid and (s.episode_id, s.step) in wasted for s in steps)
        scaled = weight * _plan_weight(log, task.task_id)
        build.examples.extend(
            Example(
                s.episode_id,
                task.task_id,
                s.step,
                task.category,
                render_messages(s.messages),
                s.output,
                scaled,
                orjson.dumps(function_tools(s.tools)).decode() if with_tools else "",
            )
            for s in steps
            if s.valid and (s.episode_id, s.step) not in wasted
        )
    build.harness_versions = sorted(versions)
    mine = [e.episode_id in build.model_episodes for e in build.examples]
    rows = [e.repeats for e in build.examples]
    own_rows = sum(r for r, m in zip(rows, mine, strict=True) if m)
    build.self_multiplier = own_multiplier(own_rows, sum(rows) - own_rows, self_weight, self_share)
    if build.self_multiplier != 1.0:
        build.examples = [
            replace(e, weight=e.weight * build.self_multiplier) if m else e
            for e, m in zip(build.examples, mine, strict=True)
        ]
    return build


def own_multiplier(own_rows: int, other_rows: int, weight: float, share: float | None) -> float:
    """The multiplier of the own examples' weights: ``weight``, lowered (not below 1) to the one at which the own
    rows make up ``share`` of all rows. The loop's first own episodes are few (47 examples against 3,179
    demonstrations), and weighted 8 they are a tenth of the rows; by the third round they may be 300, and weighted 8
    they are almost half of the rows, most of them of templates the model solves already, and the demonstrations of
    the others are trained on less."""
    if share is None or own_rows == 0 or other_rows == 0:
        return weight
    return max(1.0, min(weight, share / (1.0 - share) * other_rows / own_rows))
