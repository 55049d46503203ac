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
    """The canonical text of an action, as a well-behaved policy would write it."""
    body = orjson.dumps(action.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS).decode()
    return f"{ACTION_OPEN}{body}{ACTION_CLOSE}"
