"""Step accuracy of a planner checkpoint: where its actions go wrong, step by step, in the real harness context.

The reference solver runs each dev task through the harness; at every step the checkpoint is asked for its
action on the same messages (teacher forcing: the episode always continues with the reference action, so one
wrong step does not derail the rest). Each model action is compared with the reference one, as parsed JSON, and
counted as exact or by its first difference: unparseable, wrong kind, wrong tool name, wrong argument names,
wrong value. It also counts how often the reference's tool is among the tools the step's system turn lists.
For wrong values it also says whether the right value and the model's one were in the window it was shown.
The dev Overall of whole episodes is a coarse, noisy figure (64 tasks); this one tells which part of an
action to work on (the copy bias and the canonical field order were chosen with it).

    .venv/bin/python bench/step_accuracy.py CHECKPOINT_DIR [--copy-bias 7] [--dev-per-category 16] [--samples 3] \
        [--by-template]

CHECKPOINT_DIR is a trained checkpoint folder (``.flywheel/learner/sft-<run>-r<round>``, or a registry download).
"""

# ruff: noqa: E402  (HF_HUB_OFFLINE is set before transformers is imported)
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import orjson
from rich.console import Console
from rich.table import Table

from bus_schemas.events.tasks import TaskSpecified
from harness_service.context.messages import ChatMessage, render_messages
from harness_service.policy.base import PolicyOutput
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds
from infra.bootstrap import open_blob_store
from learner.config import LearnerConfig
from learner.episodes import run_judged_episode
from learner.jobs import dev_tasks, skills
from learner.model.policy import PlannerPolicy
from learner.model.window import PromptWindow
from learner.rl.frontier import template_of
from producers.backends.base import Observation
from producers.backends.sandbox.backend import SandboxBackend
from producers.tasks.solver import harness_reference

KINDS = ("exact", "unparseable", "wrong kind", "wrong tool", "wrong argument names", "wrong value")
_ACTION = re.compile(r"<action>(.*?)</action>", re.S)
_LISTED_TOOL = re.compile(r"^- ([\w.]+)\(", re.M)


def parsed(text: str) -> dict[str, Any] | None:
    found = _ACTION.search(text)
    try:
        value = orjson.loads(found.group(1)) if found else None
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def difference(reference: dict[str, Any] | None, model: dict[str, Any] | None) -> str:
    """The first way the model's action differs from the reference's, in the order a model writes it."""
    if model is not None and model == reference:
        return "exact"
    if model is None or reference is None:
        return "unparseable"
    if model.get("kind") != reference.get("kind"):
        return "wrong kind"
    if model.get("name") != reference.get("name"):
        return "wrong tool"
    args = reference.get("args")
    if isinstance(args, dict) and set(model.get("args") or {}) != set(args):
        return "wrong argument names"
    return "wrong value"


@dataclasses.dataclass
class Tally:
    kinds: defaultdict[str, Counter[str]] = dataclasses.field(default_factory=lambda: defaultdict(Counter))
    listed: Counter[bool] = dataclasses.field(default_factory=Counter)
    samples: defaultdict[str, list[tuple[str, str]]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    values: Counter[str] = dataclasses.field(default_factory=Counter)
    """Each wrong argument value, by where the right one and the model's one stand in the model's window."""
    templates: defaultdict[str, Counter[str]] = dataclasses.field(default_factory=lambda: defaultdict(Counter))
    """Per template: its steps by kind, plus ``episodes``, ``all exact`` (every step of the episode exact: the
    model would solve it acting greedily) and ``first <kind>`` (the first step that was not exact, by kind)."""


def _values(action: dict[str, Any]) -> dict[str, Any]:
    """A tool call's arguments; the fields of any other action (a finish's answer, a sub-agent's goal)."""
    args = action.get("args")
    if action.get("kind") == "tool_call" and isinstance(args, dict):
        return args
    return {key: value for key, value in action.items() if key != "kind"}


def _shown(value: Any, window: str) -> bool:
    """``value`` (each string or number in it) appears in the window's text."""
    if isinstance(value, list):
        return bool(value) and all(_shown(v, window) for v in value)
    if isinstance(value, bool) or value is None or isinstance(value, dict):
        return True
    return str(value) in window


class Probe:
    """A harness policy that acts as the reference solver and asks the model at every step."""

    def __init__(
        self, reference: ScriptedPolicy, model: PlannerPolicy, tally: Tally, task: TaskSpecified, samples: int
    ):
        self.reference, self.planner, self.tally = reference, model, tally
        self.category, self.keep = task.category, samples
        self.template = template_of(task)
        self.first: str | None = None
        self.name = self.model = reference.name

    def close(self) -> None:
        """Counts the episode for its template once the reference has finished it."""
        counts = self.tally.templates[self.template]
        counts["episodes"] += 1
        counts["all exact" if self.first is None else f"first {self.first}"] += 1

    def _values(self, messages: Sequence[ChatMessage], reference: dict[str, Any], model: dict[str, Any]) -> None:
        """Where each wrong value stands: the right one in the window or not (lost to the window's budget, or made
        up: a composed text, an answer worked out from results), the model's one in it or not (copied from the
        wrong passage, or written from what it memorised)."""
        window = self.planner.tokenizer.decode(
            self.planner.window.prompt_ids(self.planner.tokenizer, render_messages(messages)), skip_special_tokens=True
        )
        for key, value in reference.items():
            if model.get(key) == value:
                continue
            right = _shown(value, window)
            wrong = _shown(model.get(key), window)
            self.tally.values[f"right {'in' if right else 'not in'} window, model's {'in' if wrong else 'not in'}"] += 1

    def observe(self, observation: Observation) -> None:
        self.reference.observe(observation)

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        out = self.reference.generate(messages)
        got = self.planner.generate(messages).text
        reference = parsed(out.text)
        model = parsed(got)
        kind = difference(reference, model)
        self.tally.kinds[self.category][kind] += 1
        self.tally.templates[self.template][kind] += 1
        if kind != "exact" and self.first is None:
            self.first = kind
        if kind == "wrong value" and reference is not None and model is not None:
            self._values(messages, _values(reference), _values(model))
        if reference is not None and reference.get("kind") == "tool_call":
            system = messages[0].content if messages and messages[0].role == "system" else ""
            self.tally.listed[reference.get("name") in _LISTED_TOOL.findall(system)] += 1
        if kind != "exact" and len(self.tally.samples[self.category]) < self.keep:
            self.tally.samples[self.category].append((out.text, got))
        return out


def _template_table(tally: Tally) -> Table:
    """One row per template, the worst first: exact steps, episodes whose every step was exact, the first wrong
    step of the others by kind (the step that ends a greedy episode, or sends it off the reference's path)."""
    table = Table(title="Per template (teacher-forced; 'all exact': every step of the episode exact)")
    for column in ("template", "episodes", "exact steps", "all exact", *(f"first {k}" for k in KINDS[1:])):
        table.add_column(column, justify="left" if column == "template" else "right", no_wrap=column == "template")

    def exact_share(item: tuple[str, Counter[str]]) -> float:
        counts = item[1]
        return counts["exact"] / max(1, sum(counts[k] for k in KINDS))

    for template, counts in sorted(tally.templates.items(), key=exact_share):
        steps = sum(counts[k] for k in KINDS)
        table.add_row(
            template,
            str(counts["episodes"]),
            f"{counts['exact']}/{steps}",
            str(counts["all exact"]),
            *(str(counts[f"first {k}"]) for k in KINDS[1:]),
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", type=Path, help="a trained checkpoint folder (config.json, tokenizer, window)")
    parser.add_argument("--copy-bias", type=float, default=None, help="override the window's copy bias")
    parser.add_argument(
        "--dev-per-category", type=int, default=16, help="dev tasks per category (default 16; 0: the whole split)"
    )
    parser.add_argument("--samples", type=int, default=3, help="wrong steps shown per category (default 3)")
    parser.add_argument(
        "--template",
        action="append",
        default=[],
        help="only the dev tasks of this template id (e.g. tu.weather_high); repeat for several",
    )
    parser.add_argument(
        "--by-template", action="store_true", help="also a table per template: its steps by kind, first wrong step"
    )
    args = parser.parse_args()

    window = PromptWindow.load(args.checkpoint)
    if args.copy_bias is not None:
        window = dataclasses.replace(window, copy_bias=args.copy_bias)
    model = PlannerPolicy.from_dir(args.checkpoint, window=window)
    config = LearnerConfig(dev_per_category=args.dev_per_category or None)
    tally, backend = Tally(), SandboxBackend()
    console = Console()
    with tempfile.TemporaryDirectory() as scratch:
        blobs = open_blob_store(f"file:///{scratch}/blobs")
        tasks = [t for t in dev_tasks(config, "step-accuracy") if not args.template or template_of(t) in args.template]
        if not tasks:
            parser.error(f"no dev task of template(s) {', '.join(args.template)}")
        with console.status("") as status:
            for i, task in enumerate(tasks, 1):
                status.update(f"dev task {i}/{len(tasks)}: {task.task_id}")
                reference = ScriptedPolicy(harness_reference(task), "reference")
                probe = Probe(reference, model, tally, task, args.samples)
                harness = Harness(
                    config=config.harness, policy=probe, blobs=blobs, events=lambda e: None, skills=skills()
                )
                run_judged_episode(harness, task, backend, RunIds(run_id="step-accuracy", round=0, cause=task.event_id))
                probe.close()

    table = Table(title=f"Teacher-forced dev steps of {args.checkpoint} (copy bias {window.copy_bias})")
    table.add_column("category", no_wrap=True)
    for kind in KINDS:
        table.add_column(kind, justify="right")
    total: Counter[str] = Counter()
    for category, kinds in sorted(tally.kinds.items()):
        total.update(kinds)
        table.add_row(category, *(str(kinds[k]) for k in KINDS))
    table.add_row("all", *(str(total[k]) for k in KINDS), style="bold")
    console.print(table)
    steps = sum(total.values())
    listed = tally.listed[True] + tally.listed[False]
    console.print(f"exact {total['exact']}/{steps} steps ({total['exact'] / max(1, steps):.3f})")
    for where, count in tally.values.most_common():
        console.print(f"wrong argument values: {where}: {count}")
    console.print(f"the step's system turn lists the reference's tool for {tally.listed[True]}/{listed} tool calls")
    if args.by_template:
        console.print(_template_table(tally))
    for category, pairs in sorted(tally.samples.items()):
        for reference_text, model_text in pairs:
            console.print(
                f"[dim]{category}[/dim] reference {reference_text}\n{' ' * len(category)} model     {model_text}"
            )


if __name__ == "__main__":
    main()
