"""Model-written patch text: a configured policy rewrites a template's instruction, or the note of a window edit's
tool (``set_tool_note``), from the cluster's evidence.

The model's reply is used only when it is one short plain line (what ``AddInstruction`` / ``SetToolNote`` accept,
at least three words for an instruction and two for a note, no markup); anything else falls back to the template.
A policy that cannot be called raises, so the runner retries the input rather than silently changing what it
would have proposed.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from consumers.harness_reviser.rules import Cluster
from harness_service.context.messages import ChatMessage
from harness_service.policy.base import Policy
from harness_service.policy.inference import Inference
from harness_service.revisions import AddInstruction, SetToolNote

SYSTEM = (
    "You improve the instructions of a phone-app planner agent. Reply with ONE short imperative sentence "
    "(at most 160 characters) that would prevent the failures described. No quotes, no markup."
)
NOTE_SYSTEM = (
    "You write the one-line note a phone-app planner agent sees next to a tool in its tool list. Reply with ONE "
    "short line (at most 100 characters) saying when and how to use the tool. No quotes, no markup."
)
_PREFIX = re.compile(r"^(instruction|answer|sentence|note)\s*:\s*", re.IGNORECASE)
_MARKUP = re.compile(r"[<>{}\[\]`]")


class ModelWriter:
    """Asks ``policy`` for the instruction text of an ``add_instruction`` draft."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.name = policy.name

    def prompt(self, cluster: Cluster, template: str) -> list[ChatMessage]:
        examples = "\n".join(f"- {e}" for e in cluster.examples())
        user = (
            f"Failure category: {cluster.category} ({len(cluster.diagnoses)} failed episodes).\n"
            f"Examples:\n{examples}\nA generic fix would be: {template}\nWrite the instruction."
        )
        return [ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=user)]

    def write(self, cluster: Cluster, template: str) -> str | None:
        """The model's instruction, or None when its reply is not a usable instruction."""
        return clean(self.policy.generate(self.prompt(cluster, template)).text)

    def note_prompt(self, cluster: Cluster, tool: str, template: str) -> list[ChatMessage]:
        examples = "\n".join(f"- {e}" for e in cluster.examples())
        traces = "\n".join(f"- {' > '.join(calls)}" for calls in list(dict.fromkeys(cluster.procedures.values()))[:3])
        user = (
            f"Failure category: {cluster.category} ({len(cluster.diagnoses)} failed episodes).\n"
            f"Examples:\n{examples}\nTool calls that solve these tasks:\n{traces}\n"
            f"Tool: {tool}. A generic note would be: {template}\nWrite the note."
        )
        return [ChatMessage(role="system", content=NOTE_SYSTEM), ChatMessage(role="user", content=user)]

    def write_note(self, cluster: Cluster, tool: str, template: str) -> str | None:
        """The model's note for ``tool``, or None when its reply is not a usable note."""
        return clean_note(tool, self.policy.generate(self.note_prompt(cluster, tool, template)).text)


def clean(reply: str) -> str | None:
    """The first non-empty line without quotes or a label prefix, if it is a valid short instruction."""
    line = next((part.strip() for part in reply.splitlines() if part.strip()), "")
    line = _PREFIX.sub("", line).strip().strip("\"'").strip()
    if len(line.split()) < 3 or _MARKUP.search(line):
        return None
    try:
        return AddInstruction(text=line).text
    except ValidationError:
        return None


def clean_note(tool: str, reply: str) -> str | None:
    """The first non-empty line without quotes or a label prefix, if it is a valid tool note of two words or more."""
    line = next((part.strip() for part in reply.splitlines() if part.strip()), "")
    line = _PREFIX.sub("", line).strip().strip("\"'").strip()
    if len(line.split()) < 2 or _MARKUP.search(line):
        return None
    try:
        return SetToolNote(tool=tool, note=line).note
    except ValidationError:
        return None


def load_writer(ref: str, registry, bus, cache_dir: Path, inference: Inference | None = None) -> ModelWriter:
    """A writer over the model ``ref`` (``models:/name@alias``, ``name/N`` or ``local:/path``), loaded once and served
    by ``inference`` (default: the process's inference port, ``FLYWHEEL_INFERENCE``, as the rollout workers')."""
    from consumers.common.model_policy import model_policy
    from producers.rollout.versions import SCRIPTED

    if ref in SCRIPTED:
        raise ValueError(f"{ref!r} is a per-task scripted policy; give the reviser a model ref")
    return ModelWriter(model_policy(ref, registry, bus, cache_dir, inference))
