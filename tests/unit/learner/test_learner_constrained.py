"""Constrained action decoding: every reference action passes the schema, invalid ones do not, and a model that
would write an unknown tool writes a valid call of a shown one instead, greedy or sampled."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest
import torch

from bus_schemas.actions import ToolCall
from harness_service.actions.format import render_action
from harness_service.actions.parser import ActionParser
from harness_service.context.messages import ChatMessage
from learner.model.constrained import ActionConstraint
from learner.model.policy import PlannerPolicy
from learner.model.tokenizer import train_tokenizer
from learner.model.window import PromptWindow
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.catalog import TOOLS
from producers.tasks.runner import run_episode
from producers.tasks.solver import reference_solver
from producers.tasks.suite import build_task_suite

pytestmark = pytest.mark.unit


def feed(constraint: ActionConstraint, text: str, piece: int = 3) -> bool:
    for start in range(0, len(text), piece):
        if not constraint.allows(text[start : start + piece]):
            return False
        constraint.accept(text[start : start + piece])
    return True


def test_every_reference_action_of_a_dev_sample_passes_and_invalid_ones_do_not() -> None:
    backend = SandboxBackend()
    tasks = [t for t in build_task_suite("constrained", seed=0) if t.split == "dev"][::6]
    checked = 0
    for task in tasks:
        actions = run_episode(backend, task, reference_solver).actions
        backend.reset(task, task.initial_conditions.seed)
        tools = backend.tools()
        for action in actions:
            constraint = ActionConstraint(tools, alphabet="°é")
            assert feed(constraint, "Next: " + render_action(action)), render_action(action)
            assert constraint.closed and not constraint.allows(" more")
            checked += 1
    assert checked > 50
    name = tools[0].name
    for bad in (
        '<action>{"kind":"tool_call","name":"no.such_tool"',
        f'<action>{{"kind":"tool_call","name":"{name}","args":{{"not_a_parameter"',
        '<action>{"kind":"teleport"',
        '<action>{"kind":"finish","answer":"x"}</actio!',
    ):
        assert not feed(ActionConstraint(tools), bad), bad


def test_a_date_or_time_argument_must_have_the_shape_the_tool_parses() -> None:
    """lm-format-enforcer checks a ``pattern`` but not a ``format``: a word where a date goes passed the schema, and
    the tool refused it. Every date and date-time the tools' own examples write passes; words do not."""
    dated = [TOOLS[name].spec for name in TOOLS if '"format"' in json.dumps(TOOLS[name].spec.parameters)]
    assert len(dated) >= 10
    for spec in dated:
        for example in spec.parameters["examples"]:
            call = render_action(ToolCall(name=spec.name, args=example))
            assert feed(ActionConstraint([spec]), call), call

    def on_day(day: str) -> str:
        return render_action(ToolCall(name="weather.on_day", args={"city": "Lisbon", "day": day}))

    spec = TOOLS["weather.on_day"].spec
    for day in ("Friday", "tomorrow", "03-04", "2026-3-4", "2026-13-04", "2026-03-04T09:00"):
        assert not feed(ActionConstraint([spec]), on_day(day)), day
    assert feed(ActionConstraint([spec]), on_day("2026-12-31"))

    def reschedule(start: str) -> str:
        args = {"event_id": "evt_1", "start": start, "end": "2026-03-21T08:00"}
        return render_action(ToolCall(name="calendar.reschedule", args=args))

    spec = TOOLS["calendar.reschedule"].spec
    for start in ("2026-03-21", "7am", "2026-03-21 7:00"):
        assert not feed(ActionConstraint([spec]), reschedule(start)), start
    for start in ("2026-03-21 07:00", "2026-03-21T07:00:30Z", "2026-03-21T07:00+01:00"):
        assert feed(ActionConstraint([spec]), reschedule(start)), start


class WantsAnUnknownTool:
    """A stand-in network that ranks the tokens of one reply (and the end of the turn) first, ``"`` and ``}`` next,
    then the rest by id."""

    def __init__(self, tokenizer, reply: str) -> None:
        self.wanted = [
            *tokenizer.encode(reply, add_special_tokens=False),
            tokenizer.convert_tokens_to_ids("<|im_end|>"),
        ]
        self.size = len(tokenizer)
        self.base = torch.linspace(0.0, -1.0, self.size)
        for token_id in range(self.size):
            piece = tokenizer.decode([token_id])
            if piece.startswith('"') or piece.startswith("}"):
                self.base[token_id] = 2.0
        self.calls, self.device, self.training = 0, torch.device("cpu"), False

    def eval(self) -> None:
        pass

    def __call__(self, input_ids, past_key_values=None, use_cache=True) -> SimpleNamespace:
        if past_key_values is None:
            self.calls = 0
        logits = self.base.clone()
        if self.calls < len(self.wanted):
            logits[self.wanted[self.calls]] = 10.0
        self.calls += 1
        return SimpleNamespace(logits=logits.view(1, 1, -1), past_key_values=object())


def test_a_model_that_would_call_an_unknown_tool_calls_a_shown_one_with_valid_arguments_greedy_or_sampled() -> None:
    backend = SandboxBackend()
    task = next(t for t in build_task_suite("constrained", seed=0) if t.source.template_id == "tu.set_alarm")
    backend.reset(task, task.initial_conditions.seed)
    shown = [t for t in backend.tools() if t.name.startswith("clock.")]
    reply = '<action>{"kind":"tool_call","name":"clock.bogus","args":{"when":"7"}}</action>'
    corpus = [reply, *(render_action(ToolCall(name=t.name, args={})) for t in shown), "time label days"]
    tokenizer = train_tokenizer(corpus * 5, vocab_size=400)
    window = PromptWindow(max_prompt_tokens=64, max_new_tokens=160)
    messages = [ChatMessage(role="user", content="Set an alarm.")]
    free = PlannerPolicy(WantsAnUnknownTool(tokenizer, reply), tokenizer, name="fake", window=window)
    assert free.generate_with_tools(messages, shown).text == reply  # unconstrained: what the network wants

    constrained_window = dataclasses.replace(window, constrained_actions=True)
    policy = PlannerPolicy(WantsAnUnknownTool(tokenizer, reply), tokenizer, name="fake", window=constrained_window)
    out = policy.generate_with_tools(messages, shown)
    action = ActionParser(shown, 4000).parse(out.text)
    assert isinstance(action, ToolCall), (out.text, action)
    assert action.name in {t.name for t in shown} and out.text.endswith("</action>")

    names = {t.name for t in shown}
    for seed in range(3):  # sampled: free, a reply the harness cannot use; constrained, a valid call of a shown tool
        free_sample = free.with_sampling(1.0, seed=seed).generate_with_tools(messages, shown)
        free_action = ActionParser(shown, 4000).parse(free_sample.text)
        assert not (isinstance(free_action, ToolCall) and free_action.name in names), free_sample.text
        sampled = PlannerPolicy(WantsAnUnknownTool(tokenizer, reply), tokenizer, name="f", window=constrained_window)
        sample = sampled.with_sampling(1.0, seed=seed).generate_with_tools(messages, shown)
        action = ActionParser(shown, 4000).parse(sample.text)
        assert isinstance(action, ToolCall) and action.name in names, sample.text
        assert sample.sampled is not None and sample.sampled.temperature == 1.0
