"""The documented text format of an action: one JSON object inside ``<action>...</action>``."""

from __future__ import annotations

import orjson

from bus_schemas.actions import Action

ACTION_OPEN, ACTION_CLOSE = "<action>", "</action>"

ACTION_FORMAT_DOC = """\
Reply with optional reasoning followed by exactly one action: a JSON object inside <action></action>.
Kinds:
<action>{"kind": "tool_call", "name": "<tool name>", "args": {<arguments matching the tool's parameters>}}</action>
<action>{"kind": "memory_read", "query": "<words to search>", "top_k": 5}</action>
<action>{"kind": "memory_write", "content": "<fact worth remembering>", "tags": ["<tag>"]}</action>
<action>{"kind": "skill_load", "name": "<offered skill name>"}</action>
<action>{"kind": "subagent_spawn", "goal": "<sub-goal>", "tools": ["<tool name>"], "max_steps": 10}</action>
<action>{"kind": "clarify", "question": "<question for the user>"}</action>
<action>{"kind": "refuse", "reason": "<why the task cannot or must not be done>"}</action>
<action>{"kind": "finish", "answer": "<final answer, or empty>"}</action>
Errors come back as observations with a code and a message; fix the action and try again."""


def render_action(action: Action) -> str:
    """The canonical text of an action, as a well-behaved policy would write it: the fields in the documented
    order (``kind`` first, then the action's own fields in schema order: ``name`` before ``args``), a tool
    call's arguments sorted by name.

    The order is what a model trained on these texts decides first. Sorted keys put ``args`` before ``kind``
    and ``name``, so the tiny planner wrote argument values before committing to the tool they belong to;
    in this order it chooses the action, then the tool, then the values. Measured on the same 288 cold-start
    demos, 1,200 SFT steps and the dev reference steps (teacher-forced, 324 steps): 109 exact steps sorted,
    114 in this order (copy bias 2.5); 119 vs 125 with copy bias 5."""
    fields = action.model_dump(mode="json")
    if isinstance(fields.get("args"), dict):
        fields["args"] = dict(sorted(fields["args"].items()))
    return f"{ACTION_OPEN}{orjson.dumps(fields).decode()}{ACTION_CLOSE}"
