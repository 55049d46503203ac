"""Optional model-assisted pass: when the rules are unsure, a configured model names the taxonomy label.

Rules stay the default and decide alone when their first finding is confident. Otherwise the model is
shown the same rebuilt episode the rules saw (goal, every model output including rejected ones, the
sub-agents' turns, the failed criteria) and asked for one label; a valid label becomes the
attribution (the rules' labels stay as secondary), anything else leaves the rules' answer. Greedy
decoding keeps the pass deterministic given the model version, which the explanation names.

Configured by ``FLYWHEEL_DIAGNOSER_MODEL``: ``scripted:LABEL`` (always answers LABEL: demos, tests),
``hf:/path/to/checkpoint`` (a local causal LM's raw completion through transformers, never downloaded), or a model
ref as the rollout workers take it (``models:/name@alias``, ``name/N``, ``local:/path``), turned into a policy by the
inference port (``FLYWHEEL_INFERENCE``: ``local:``, ``openai+http://host:port/v1`` for any OpenAI-compatible server,
``vllm:``) and asked with one user message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from bus_schemas.events import EpisodeVerified, FailureCategory, TaskSpecified
from consumers.common.episode import EpisodeRecord, Rejection, Turn
from consumers.diagnoser.rules import Finding

if TYPE_CHECKING:
    from infra.bootstrap import Ports

Completer = Callable[[str], str]
LABELS: tuple[str, ...] = get_args(FailureCategory)
CONFIDENT = 0.6
MODEL_CONFIDENCE = 0.5
ENV = "FLYWHEEL_DIAGNOSER_MODEL"
MODEL_CACHE = Path(".flywheel/diagnoser-models")
_MODEL_REF = re.compile(r"^(models:/\S+|local:\S+|[\w.-]+(/\d+|@[\w.-]+))$")


def prompt(task: TaskSpecified, episode: EpisodeRecord, verdict: EpisodeVerified, found: list[Finding]) -> str:
    """The rebuilt episode the rules saw, as text: every model output (rejected ones too) and the sub-agents' turns."""
    failed = [r.criterion_id for r in verdict.criteria if not r.passed]
    lines = [f"Goal: {task.goal}", f"Tools: {', '.join(task.tools)}", f"Ended: {episode.ended.reason}"]
    for spawned_at, record in episode.walk():
        indent = "" if spawned_at is None else "  "
        if spawned_at is not None:
            lines.append(
                f"{indent}sub-agent {record.episode_id[-8:]} (spawned at step {spawned_at}), ended "
                f"{record.ended.reason}:"
            )
        lines += [indent + _turn(t) for t in record.turns]
    lines += [
        f"Failed criteria: {', '.join(failed) or 'none'}",
        f"Rule guesses: {', '.join(f.label for f in found)}",
        f"Answer with one label of: {', '.join(LABELS)}.",
        "Label:",
    ]
    return "\n".join(lines)


def _turn(turn: Turn) -> str:
    if isinstance(turn, Rejection):
        return f"step {turn.number}: unusable output -> error {turn.code}: {turn.rejected.error.message[:200]}"
    obs = turn.observation
    seen = "no observation" if obs is None else (f"error {obs.error.code}" if obs.error else str(obs.result)[:200])
    return f"step {turn.number}: {turn.action.action.model_dump_json()[:300]} -> {seen}"


def parse_label(text: str) -> str | None:
    """The taxonomy label named first in ``text``; None when it names none."""
    hits = [(m.start(), label) for label in LABELS if (m := re.search(rf"\b{label}\b", text.lower()))]
    return min(hits)[1] if hits else None


@dataclass(frozen=True)
class ModelAssist:
    complete: Completer
    version: str
    confident: float = CONFIDENT

    def review(
        self, task: TaskSpecified, episode: EpisodeRecord, verdict: EpisodeVerified, found: list[Finding]
    ) -> list[Finding]:
        """``found`` unchanged when the rules are confident or the model names no label; else the model's first."""
        if found[0].confidence >= self.confident:
            return found
        label = parse_label(self.complete(prompt(task, episode, verdict, found)))
        if label is None or label == found[0].label:
            return found
        step = next((f.step for f in found if f.label == label), None)
        why = f"model {self.version} says {label}; rules said {found[0].label} ({found[0].explanation})"
        return [Finding(label, step, why, MODEL_CONFIDENCE), *found]  # type: ignore[arg-type]


def assist_ref(ref: str | None = None) -> str | None:
    """The configured ref (``ref`` or the environment), checked; None: rules only."""
    ref = ref if ref is not None else os.environ.get(ENV)
    if not ref:
        return None
    kind, _, arg = ref.partition(":")
    if (kind in ("scripted", "hf") and arg) or _MODEL_REF.match(ref):
        return ref
    raise ValueError(
        f"{ENV}={ref!r}: expected scripted:LABEL, hf:/path/to/checkpoint or a model ref "
        "(models:/name@alias, name/N, local:/path)"
    )


def load_assist(
    ref: str | None = None, ports: Ports | None = None, cache_dir: Path = MODEL_CACHE
) -> ModelAssist | None:
    """The configured assist, or None: rules only. A model ref needs ``ports`` (its registry and bus) and is served
    by the process's inference port, as the rollout workers' policies are."""
    ref = assist_ref(ref)
    if ref is None:
        return None
    kind, _, arg = ref.partition(":")
    if kind == "scripted":
        return ModelAssist(lambda _prompt: arg, ref)
    if kind == "hf":
        return ModelAssist(_local_lm(arg), ref)
    if ports is None:
        raise ValueError(f"{ENV}={ref!r} is a model ref: loading it needs the registry and bus (ports)")
    return ModelAssist(_served(ref, ports, cache_dir), ref)


def _served(ref: str, ports: Ports, cache_dir: Path) -> Completer:
    from consumers.common.model_policy import model_policy
    from harness_service.context.messages import ChatMessage

    policy = model_policy(ref, ports.registry, ports.bus, cache_dir)

    def complete(text: str) -> str:
        return policy.generate([ChatMessage(role="user", content=text)]).text

    return complete


def _local_lm(path: str) -> Completer:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()

    def complete(text: str) -> str:
        inputs = tokenizer(text, return_tensors="pt", truncation=True, max_length=2048)
        out = model.generate(**inputs, max_new_tokens=12, do_sample=False)
        return str(tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True))

    return complete
