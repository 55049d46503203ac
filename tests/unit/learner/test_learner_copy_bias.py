"""Copy bias: inside a tool call's argument, tokens that continue a passage (or a number) of the prompt are favoured."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from harness_service.context.messages import ChatMessage
from learner.model import train_tokenizer
from learner.model.copy_bias import CopyBias
from learner.model.policy import PlannerPolicy
from learner.model.window import END, PromptWindow

pytestmark = pytest.mark.unit

GOAL = "Set an alarm for 20:35 labelled 'Stretch'."
CALL = '<action>{"kind":"tool_call","name":"clock.set_alarm","args":{'
COPIED = CALL + '"label":"Stretch","time":"20:35"}}</action>'
MEMORISED = CALL + '"label":"Stretch","time":"22:05"}}</action>'
WINDOW = PromptWindow(max_prompt_tokens=256, max_new_tokens=64, goal_tokens=64, system_tokens=32)


@pytest.fixture(scope="module")
def tokenizer():
    corpus = [GOAL, COPIED, MEMORISED, "Set an alarm for 07:15 labelled 'Gym'.", '{"answer":"Done.","kind":"finish"}']
    return train_tokenizer(corpus * 4, vocab_size=320)


def _pieces(tokenizer, ids: list[int]) -> set[str]:
    return {tokenizer.decode([i]) for i in ids}


def test_only_tokens_continuing_a_prompt_passage_inside_an_argument_are_favoured(tokenizer) -> None:
    copy = CopyBias(tokenizer, 2.5).prompt(tokenizer.encode(f"# Task\n{GOAL}"))
    assert copy.favoured('<action>{"kind":"finish","answer":"') == []  # not a tool call's argument
    assert copy.favoured(CALL + '"') == []  # a key, not a value
    inside = copy.favoured(CALL + '"time":"20:')
    assert inside and all(("20:" + p).split('"')[0] in "20:35" for p in _pieces(tokenizer, inside))
    assert "3" in _pieces(tokenizer, inside) and "0" not in _pieces(tokenizer, inside)
    closing = _pieces(tokenizer, copy.favoured(CALL + '"time":"20:35'))
    assert any(p.startswith('"') for p in closing)  # the passage ends at a boundary: the value may close
    assert not any(p.startswith('"') for p in _pieces(tokenizer, copy.favoured(CALL + '"time":"20:3')))
    first = _pieces(tokenizer, copy.favoured(CALL + '"label":"'))
    assert "2" in first and "7" not in first and any(p.startswith("S") for p in first)
    assert copy.favoured(CALL + '"time":"99') == []  # no passage of the prompt starts so


def test_a_number_the_model_began_is_continued_as_a_number_of_the_prompt(tokenizer) -> None:
    copy = CopyBias(tokenizer, 2.5).prompt(tokenizer.encode("# Task\nStart a 35-minute focus session at 20:15."))
    timer = '<action>{"kind":"tool_call","name":"clock.start_timer","args":{"label":"Focus","minutes":'
    assert copy.favoured(timer) == []  # the model has not begun a number: no bias on what the value will be
    assert _pieces(tokenizer, copy.favoured(timer + "3")) == {"5"}  # "35", not a memorised "30"
    assert _pieces(tokenizer, copy.favoured(timer + "2")) == {"0"}  # "20" (of 20:15)
    closing = _pieces(tokenizer, copy.favoured(timer + "35"))
    assert closing and all(p[0] in ",}]" and not any(c.isdigit() for c in p) for p in closing)
    assert copy.favoured(timer + "9") == []  # no number of the prompt starts so
    assert copy.favoured('<action>{"kind":"finish","answer":3') == []  # not a tool call's argument


class _ScriptedNetwork:
    """A network that prefers one output (logit 5 on its next token) over another (logit 4): the memorised value
    beats the copied one by a margin a copy bias of 2.5 overturns and a bias of 0 does not."""

    device = torch.device("cpu")

    def __init__(self, tokenizer, prompt_length: int) -> None:
        self.tokenizer = tokenizer
        self.vocab = len(tokenizer)
        self.prompt_length = prompt_length
        self.plans = [(tokenizer.encode(MEMORISED), 5.0), (tokenizer.encode(COPIED), 4.0)]
        self.end = tokenizer.convert_tokens_to_ids(END)

    def eval(self) -> None:
        return None

    def __call__(self, input_ids, past_key_values=None, use_cache=True):  # noqa: ANN001
        seen = (past_key_values or []) + input_ids[0].tolist()
        generated = seen[self.prompt_length :]
        logits = torch.zeros(1, 1, self.vocab)
        for plan, score in self.plans:
            if generated == plan:
                logits[0, -1, self.end] = max(float(logits[0, -1, self.end]), score)
            elif plan[: len(generated)] == generated and len(generated) < len(plan):
                nxt = plan[len(generated)]
                logits[0, -1, nxt] = max(float(logits[0, -1, nxt]), score)
        return SimpleNamespace(logits=logits, past_key_values=seen)


@pytest.mark.parametrize("bonus, expected", [(0.0, MEMORISED), (2.5, COPIED)])
def test_the_bias_turns_a_memorised_value_into_the_prompts_value(tokenizer, bonus, expected) -> None:
    window = dataclasses.replace(WINDOW, copy_bias=bonus)
    messages = [ChatMessage(role="system", content="Tools."), ChatMessage(role="user", content=f"# Task\n{GOAL}")]
    from harness_service.context.messages import render_messages

    length = len(window.prompt_ids(tokenizer, render_messages(messages)))
    policy = PlannerPolicy(_ScriptedNetwork(tokenizer, length), tokenizer, name="scripted", window=window)
    out = policy.generate(messages)
    assert out.text == expected
    assert out.sampled is not None and len(out.sampled.logprobs) == len(out.sampled.completion_ids)


def test_a_negative_bias_is_refused() -> None:
    with pytest.raises(ValueError, match="copy_bias"):
        dataclasses.replace(WINDOW, copy_bias=-1.0)
