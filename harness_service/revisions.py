"""Harness revisions: the fixed list of change kinds a reviser may propose, and ``apply(base, patch)``.

Each kind is a typed patch (a frozen pydantic model with a ``kind`` tag) over ``HarnessConfig``:

- ``add_instruction``: append one short line to ``instructions``;
- ``edit_instruction``: replace an exact passage of ``instructions`` with a short line;
- ``add_skill`` / ``edit_skill``: add or rewrite the skill note of an app, a line
  ``Skill <name>: use <tools>. <note>`` in ``instructions`` (the config has no skill list of its own;
  the skill library is versioned apart, so notes ride in the instructions every context starts with);
- ``set_memory_policy``: set fields of ``MemoryPolicy``;
- ``set_budgets``: set fields of ``HarnessBudgets``;
- ``set_tool_note``: set (or clear) the one-line note a compact context shows for a tool in place of its
  description (``CompactContext.tool_notes``): a tool-description edit that reaches a small model's window;
- ``set_tool_selection``: set the compact profile's tool-selection policy (``tool_top_k`` tools a step shows,
  ``tool_description_chars``, ``skill_chars``, ``offer_skills``);
- ``add_tool_successors``: set, for the tools it names, the tools a compact context shows first at the step after
  a call to them (``CompactContext.tool_successors``; ``""`` names the first step): a procedure prior.

The last three need a compact profile (``HarnessConfig.compact``): they edit the system turn a small model's
window keeps, where the instruction kinds only append to its head.

``apply`` raises :class:`InvalidPatch` (with the reason) for a patch that does not fit the base — an
instruction or skill already there, a passage or skill that is missing, a value out of range — or that
changes nothing. ``patch_bytes`` is the canonical JSON a proposal stores as its patch blob.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Literal, get_args

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from harness_service.config import CompactContext, HarnessBudgets, HarnessConfig, MemoryPolicy

ChangeKind = Literal[
    "add_instruction",
    "edit_instruction",
    "add_skill",
    "edit_skill",
    "set_memory_policy",
    "set_budgets",
    "set_tool_note",
    "set_tool_selection",
    "add_tool_successors",
]
CHANGE_KINDS: tuple[str, ...] = get_args(ChangeKind)
MAX_LINE_CHARS = 160
"""Instruction lines stay short: the CPU model reads a small prompt window."""
MAX_NOTE_CHARS = 100
"""A tool note is one line of the compact tool list: it costs window tokens on every step that shows the tool."""
PATCH_MEDIA_TYPE = "application/vnd.flywheel.harness-patch+json"
_SKILL_LINE = re.compile(r"^Skill ([a-z0-9_-]+): ", re.MULTILINE)


class InvalidPatch(ValueError):
    """A patch that is malformed, does not fit its base config, or changes nothing."""


def _line(text: str) -> str:
    text = text.strip()
    if not text or "\n" in text or "\r" in text:
        raise ValueError("must be one non-empty line")
    if len(text) > MAX_LINE_CHARS:
        raise ValueError(f"must be at most {MAX_LINE_CHARS} characters, got {len(text)}")
    if _SKILL_LINE.match(text):
        raise ValueError("looks like a skill note; use add_skill / edit_skill")
    return text


class _Patch(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AddInstruction(_Patch):
    """Append ``text`` as a new line of the instructions."""

    kind: Literal["add_instruction"] = "add_instruction"
    text: str

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        return _line(value)


class EditInstruction(_Patch):
    """Replace the exact passage ``old`` of the instructions with ``new``."""

    kind: Literal["edit_instruction"] = "edit_instruction"
    old: Annotated[str, Field(min_length=1)]
    new: str

    @field_validator("new")
    @classmethod
    def _new(cls, value: str) -> str:
        return _line(value)


class _SkillPatch(_Patch):
    name: Annotated[str, Field(pattern=r"^[a-z0-9_-]+$", max_length=64)]
    tools: Annotated[
        list[Annotated[str, Field(pattern=r"^[a-z0-9_]+\.[a-z0-9_]+$")]], Field(min_length=1, max_length=6)
    ]
    note: str = ""

    @field_validator("note")
    @classmethod
    def _note(cls, value: str) -> str:
        return _line(value) if value.strip() else ""

    def line(self) -> str:
        """The skill note as it appears in the instructions."""
        text = f"Skill {self.name}: use {', '.join(self.tools)}." + (f" {self.note}" if self.note else "")
        if len(text) > 2 * MAX_LINE_CHARS:
            raise InvalidPatch(
                f"skill note of {self.name!r} is {len(text)} characters; keep it under {2 * MAX_LINE_CHARS}"
            )
        return text


class AddSkill(_SkillPatch):
    """Add a note for skill/app ``name``: the tools to use for its goals, and an optional hint."""

    kind: Literal["add_skill"] = "add_skill"


class EditSkill(_SkillPatch):
    """Rewrite the existing note of skill/app ``name``."""

    kind: Literal["edit_skill"] = "edit_skill"


class SetMemoryPolicy(_Patch):
    """Set the given fields of the memory policy (unset fields keep the base value)."""

    kind: Literal["set_memory_policy"] = "set_memory_policy"
    enabled: bool | None = None
    retrieve_top_k: int | None = None
    seed_from_task: bool | None = None
    consolidate_on_end: bool | None = None


class SetBudgets(_Patch):
    """Set the given episode budgets (unset fields keep the base value)."""

    kind: Literal["set_budgets"] = "set_budgets"
    max_steps: int | None = None
    max_total_tokens: int | None = None
    context_tokens: int | None = None
    max_invalid_actions: int | None = None


class SetToolNote(_Patch):
    """Show ``note`` for ``tool`` in the compact tool list (an empty note removes the harness's note)."""

    kind: Literal["set_tool_note"] = "set_tool_note"
    tool: Annotated[str, Field(pattern=r"^[a-z0-9_]+\.[a-z0-9_]+$", max_length=128)]
    note: str = ""

    @field_validator("note")
    @classmethod
    def _note(cls, value: str) -> str:
        value = value.strip()
        if "\n" in value or "\r" in value:
            raise ValueError("must be one line")
        if len(value) > MAX_NOTE_CHARS:
            raise ValueError(f"must be at most {MAX_NOTE_CHARS} characters, got {len(value)}")
        return value


class SetToolSelection(_Patch):
    """Set the given fields of the compact profile's tool selection (unset fields keep the base value)."""

    kind: Literal["set_tool_selection"] = "set_tool_selection"
    tool_top_k: int | None = None
    tool_description_chars: int | None = None
    skill_chars: int | None = None
    offer_skills: bool | None = None


MAX_SUCCESSORS = 2
"""Tools a successor entry names: each costs a line of the compact tool list at the step after its tool."""
_TOOL_NAME = r"^[a-z0-9_]+\.[a-z0-9_]+$"


class AddToolSuccessors(_Patch):
    """Set the successor entries it names (tool -> the tools to show first at the step after a call to it; ``""``:
    the first step); the base's other entries stay."""

    kind: Literal["add_tool_successors"] = "add_tool_successors"
    successors: Annotated[
        dict[
            Annotated[str, Field(pattern=r"^$|" + _TOOL_NAME, max_length=128)],
            Annotated[
                tuple[Annotated[str, Field(pattern=_TOOL_NAME, max_length=128)], ...],
                Field(min_length=1, max_length=MAX_SUCCESSORS),
            ],
        ],
        Field(min_length=1, max_length=64),
    ]


Patch = Annotated[
    AddInstruction
    | EditInstruction
    | AddSkill
    | EditSkill
    | SetMemoryPolicy
    | SetBudgets
    | SetToolNote
    | SetToolSelection
    | AddToolSuccessors,
    Field(discriminator="kind"),
]
_ADAPTER: TypeAdapter[Patch] = TypeAdapter(Patch)


def parse_patch(data: bytes | str | dict) -> Patch:
    """A patch from its JSON (or a dict); :class:`InvalidPatch` naming what is wrong."""
    try:
        return _ADAPTER.validate_python(data) if isinstance(data, dict) else _ADAPTER.validate_json(data)
    except ValidationError as exc:
        raise InvalidPatch(f"invalid harness patch: {exc.errors(include_url=False)}") from exc


def patch_bytes(patch: Patch) -> bytes:
    """Canonical JSON (sorted keys, unset fields omitted): equal patches give equal bytes."""
    return orjson.dumps(patch.model_dump(exclude_none=True), option=orjson.OPT_SORT_KEYS)


def patch_digest(patch: Patch) -> str:
    return "sha256:" + hashlib.sha256(patch_bytes(patch)).hexdigest()


def skill_notes(config: HarnessConfig) -> dict[str, str]:
    """Skill name -> its note line, as found in the instructions."""
    return {m.group(1): line for line in config.instructions.splitlines() if (m := _SKILL_LINE.match(line))}


def instruction_lines(config: HarnessConfig) -> list[str]:
    return [line.strip() for line in config.instructions.splitlines() if line.strip()]


def apply(base: HarnessConfig, patch: Patch) -> HarnessConfig:
    """The config ``base`` with ``patch`` applied; :class:`InvalidPatch` when it does not fit or changes nothing."""
    if isinstance(patch, AddInstruction):
        if patch.text in base.instructions:
            raise InvalidPatch(f"the instructions already say {patch.text!r}")
        result = base.model_copy(update={"instructions": f"{base.instructions.rstrip()}\n{patch.text}"})
    elif isinstance(patch, EditInstruction):
        if patch.old not in base.instructions:
            raise InvalidPatch(f"the instructions do not contain {patch.old!r}")
        if patch.new in base.instructions:
            raise InvalidPatch(f"the instructions already say {patch.new!r}")
        result = base.model_copy(update={"instructions": base.instructions.replace(patch.old, patch.new, 1)})
    elif isinstance(patch, AddSkill | EditSkill):
        result = _apply_skill(base, patch)
    elif isinstance(patch, SetMemoryPolicy):
        result = base.model_copy(update={"memory": _set(MemoryPolicy, base.memory, patch)})
    elif isinstance(patch, SetToolNote | SetToolSelection | AddToolSuccessors):
        result = base.model_copy(update={"compact": _apply_compact(base, patch)})
    else:
        result = base.model_copy(update={"budgets": _set(HarnessBudgets, base.budgets, patch)})
    if result == base:
        raise InvalidPatch(f"{patch.kind} changes nothing in {base.name}")
    return result


def _apply_skill(base: HarnessConfig, patch: AddSkill | EditSkill) -> HarnessConfig:
    notes = skill_notes(base)
    line = patch.line()
    if isinstance(patch, AddSkill):
        if patch.name in notes:
            raise InvalidPatch(f"skill {patch.name!r} already has a note; use edit_skill")
        return base.model_copy(update={"instructions": f"{base.instructions.rstrip()}\n{line}"})
    if patch.name not in notes:
        raise InvalidPatch(f"skill {patch.name!r} has no note to edit; use add_skill")
    lines = [line if existing == notes[patch.name] else existing for existing in base.instructions.splitlines()]
    return base.model_copy(update={"instructions": "\n".join(lines)})


def _apply_compact(base: HarnessConfig, patch: SetToolNote | SetToolSelection | AddToolSuccessors) -> CompactContext:
    if base.compact is None:
        raise InvalidPatch(f"{patch.kind} needs a compact harness profile; {base.name} renders every tool in full")
    if isinstance(patch, SetToolSelection):
        return _set(CompactContext, base.compact, patch)  # type: ignore[return-value]
    if isinstance(patch, AddToolSuccessors):
        successors = {**base.compact.tool_successors, **patch.successors}
        return base.compact.model_copy(update={"tool_successors": dict(sorted(successors.items()))})
    notes = dict(base.compact.tool_notes)
    if patch.note:
        notes[patch.tool] = patch.note
    elif notes.pop(patch.tool, None) is None:
        raise InvalidPatch(f"{patch.tool} has no note to remove")
    return base.compact.model_copy(update={"tool_notes": dict(sorted(notes.items()))})


def _kind(patch: BaseModel) -> str:
    return str(patch.model_dump().get("kind", type(patch).__name__))


def _set(model: type[BaseModel], current: BaseModel, patch: BaseModel) -> BaseModel:
    changes = patch.model_dump(exclude_none=True, exclude={"kind"})
    if not changes:
        raise InvalidPatch(f"{_kind(patch)} sets no field")
    try:
        return model.model_validate({**current.model_dump(), **changes})
    except ValidationError as exc:
        raise InvalidPatch(f"{_kind(patch)}: {exc.errors(include_url=False)}") from exc
