"""Constrained action decoding: inside ``<action>...</action>`` the planner can only write a valid action.

The tiny planner's failures are mostly outputs the harness cannot use (a cold start's dev episodes, 2026-12-03:
37 of 60 failures ended on ``invalid_output``: JSON that does not parse, a tool that does not exist, arguments
outside the tool's schema). With the step's tools known (the harness passes them to ``generate_with_tools``),
the JSON of an action is held to one JSON Schema: an ``anyOf`` of one object per shown tool (``kind``
``tool_call``, ``name`` that tool, ``args`` its parameter schema) and one per other action kind, every field the
documented renderer writes required (``harness_service.actions.format.render_action``). ``lm-format-enforcer``'s
character-level JSON Schema parser decides which characters may follow; greedy decoding takes, among the
highest-scoring tokens, the first whose text keeps the action valid (sampling: the first of its draws without
replacement that does), then ``</action>``, then the end of the turn. A value slot's token is read as the value it
names in the prompt (``PromptWindow.slot_values``), so a slot whose value the schema refuses is refused too.
Reasoning before ``<action>`` is not constrained. A constraint decides only between tokens the model already
ranks; it never writes a value the model did not score.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from bus_schemas.actions import Clarify, Finish, MemoryRead, MemoryWrite, Refuse, SkillLoad, SubagentSpawn
from harness_service.actions.format import ACTION_CLOSE, ACTION_OPEN
from producers.backends.base import ToolSpec

OTHER_KINDS = (MemoryRead, MemoryWrite, SkillLoad, SubagentSpawn, Clarify, Refuse, Finish)
_DROP = frozenset({"title", "examples", "description", "default"})


_DAY = r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
_TIME = r"([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,6})?)?(Z|[+-]([01]\d|2[0-3]):?[0-5]\d)?"
FORMAT_PATTERNS = {"date": f"^{_DAY}$", "date-time": f"^{_DAY}[Tt _]{_TIME}$", "time": f"^{_TIME}$"}
"""The string formats of the tools' schemas as patterns of what pydantic parses for them: lm-format-enforcer checks
a ``pattern`` but not a ``format``, so "Friday" or "tomorrow" passed as a date and the tool refused it (the seed-0
main job, 2026-12-08: 7 of the 29 failure diagnoses of its round-0 dev evaluation were a date the tool could not
parse). Held to the pattern, that model wrote a parseable date, mostly a wrong one: on the whole splits (128 tasks
each) dev 0.581 either way (2 tasks won, 1 lost), test 0.538 -> 0.534 (1 won, 1 lost). Integer ranges
(``minimum``/``maximum``) are not checked by the parser either (12 of the same run's 313 failure diagnoses)."""


def _clean(schema: Any) -> Any:
    """A schema as the parser reads it: without the annotation keywords it does not need (titles, examples,
    descriptions), and a string's ``format`` of ``FORMAT_PATTERNS`` held as that pattern."""
    if isinstance(schema, dict):
        cleaned = {
            k: {name: _clean(sub) for name, sub in v.items()} if k in ("properties", "$defs") else _clean(v)
            for k, v in schema.items()
            if k not in _DROP
        }
        shape = cleaned.get("format")
        if isinstance(shape, str) and shape in FORMAT_PATTERNS and "pattern" not in cleaned:
            cleaned["pattern"] = FORMAT_PATTERNS[shape]
        return cleaned
    if isinstance(schema, list):
        return [_clean(v) for v in schema]
    return schema


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def action_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """The JSON Schema of every action the step allows: a call of one of ``tools`` or another action kind."""
    variants = [
        _object({"kind": {"const": "tool_call"}, "name": {"const": t.name}, "args": _clean(t.parameters)})
        for t in tools
    ]
    return {"anyOf": [*variants, *_other_kinds()]}


@cache
def _other_kinds() -> tuple[dict[str, Any], ...]:
    """The schema of each action kind other than a tool call; the same at every step (built once: pydantic's schema
    generation was a twentieth of a constrained dev evaluation's time)."""
    variants = []
    for model in OTHER_KINDS:
        schema = _clean(model.model_json_schema())
        properties = dict(schema["properties"])
        properties["kind"] = {"const": model.model_fields["kind"].default}
        variants.append({**_object(properties), **({"$defs": schema["$defs"]} if "$defs" in schema else {})})
    return tuple(variants)


def extra_alphabet(pieces: Iterable[str]) -> str:
    """The characters of ``pieces`` (a tokenizer's decoded tokens) beyond printable ASCII, control characters left
    out (a raw newline is not valid inside a JSON string)."""
    from lmformatenforcer.consts import COMPLETE_ALPHABET

    known = set(COMPLETE_ALPHABET)
    return "".join(sorted({c for piece in pieces for c in piece if c not in known and c.isprintable()}))


@dataclass(frozen=True)
class _State:
    """Where the reply stands: free text (``tail``: its last characters, to spot ``<action>``), inside the action's
    JSON (``parser``), matching ``</action>`` (``closing`` characters of it so far), or done."""

    mode: str = "free"
    tail: str = ""
    parser: Any = None
    closing: int = 0


class ActionConstraint:
    """Which next tokens keep the generated text a valid reply, for one step's tools; built per step. ``allows``
    branches from the state of what was accepted so far (the parser is immutable), so a candidate costs only its
    own characters."""

    def __init__(self, tools: Sequence[ToolSpec], alphabet: str = "") -> None:
        """``alphabet``: characters a string value may hold besides printable ASCII (``extra_alphabet`` of the
        tokenizer's pieces: a goal's "°C" or "é" must stay writable)."""
        from lmformatenforcer import CharacterLevelParserConfig, JsonSchemaParser
        from lmformatenforcer.consts import COMPLETE_ALPHABET

        config = CharacterLevelParserConfig(alphabet=COMPLETE_ALPHABET + alphabet)
        self._start = JsonSchemaParser(action_schema(tools), config)
        self._state = _State()

    @property
    def closed(self) -> bool:
        """The reply's action is complete: only the end of the turn may follow."""
        return self._state.mode == "done"

    @property
    def inside(self) -> bool:
        """Past ``<action>``: the next tokens are held to the schema."""
        return self._state.mode != "free"

    def allows(self, piece: str) -> bool:
        """Whether the accepted text plus ``piece`` is still a prefix of: free text, ``<action>``, a valid action's
        JSON, ``</action>``."""
        return self._advance(self._state, piece) is not None

    def accept(self, piece: str) -> None:
        """Commit ``piece`` (it may break the constraint: the caller falls back to the model's own choice when no
        candidate is allowed; the constraint then stops applying)."""
        self._state = self._advance(self._state, piece) or _State(mode="broken")

    def _advance(self, state: _State, piece: str) -> _State | None:
        mode, tail, parser, closing = state.mode, state.tail, state.parser, state.closing
        for char in piece:
            if mode == "free":
                tail = (tail + char)[-len(ACTION_OPEN) :]
                if tail == ACTION_OPEN:
                    mode, parser = "json", self._start
                continue
            if mode == "json":
                if char in parser.get_allowed_characters():
                    parser = parser.add_character(char)
                    continue
                if not parser.can_end():
                    return None
                mode = "close"
            if mode == "close":
                if char != ACTION_CLOSE[closing]:
                    return None
                closing += 1
                if closing == len(ACTION_CLOSE):
                    mode = "done"
                continue
            if mode == "broken":
                continue
            return None  # done: nothing may follow the action
        return _State(mode, tail, parser, closing)
