"""SFT can stress an action's values (a call's arguments, a memory query) over its fixed syntax: the spans are
found in the completion text, mapped to its tokens, and the trainer's loss is their weighted mean."""

from __future__ import annotations

import pytest

from learner.dataset.build import Example
from learner.dataset.tokenize import LOSS_WEIGHT, tokenize_example
from learner.dataset.value_weights import value_spans, value_weights
from learner.model import PromptWindow, TinyModelConfig, build_tiny_model, train_tokenizer
from learner.sft import SftSettings, train_sft

pytestmark = pytest.mark.unit

CALL = (
    '<action>{"kind":"tool_call","name":"clock.set_alarm",'
    '"args":{"days":["mon","fri"],"label":"Gym: legs","minutes":35,"confirm":true}}</action>'
)


def spans_text(completion: str) -> list[str]:
    return [completion[begin:end] for begin, end in value_spans(completion)]


def test_the_spans_are_the_values_of_an_action_not_its_kind_tool_name_or_keys() -> None:
    assert spans_text(CALL) == ["mon", "fri", "Gym: legs", "35", "true"]
    read = '<action>{"kind":"memory_read","query":"my usual order at Juniper","top_k":5}</action>'
    assert spans_text(read) == ["my usual order at Juniper", "5"]
    assert spans_text('<action>{"kind":"finish","answer":"Booked."}</action>') == ["Booked."]
    spaced = '<action>{"kind": "tool_call", "name": "a.b", "args": {"city": "Lisbon", "nights": 3}}</action>'
    assert spans_text(spaced) == ["Lisbon", "3"]  # a model's own output may space its JSON
    assert spans_text('<action>{"kind":"tool_call","name":"a.b","args":{"q":""}}</action>') == []  # nothing to stress
    assert spans_text('<action>{"kind":"tool_call","name":"a.b","args":{"q":"Nor') == []  # does not parse


def corpus() -> list[str]:
    return [f"user: wake me at {h}:{m}0 {CALL}" for h in range(10) for m in range(6)]


def test_the_tokens_overlapping_a_value_get_the_weight_and_the_rest_of_the_output_one() -> None:
    tokenizer = train_tokenizer(corpus(), vocab_size=300)
    window = PromptWindow()
    ids = window.completion_ids(tokenizer, CALL)
    weights = value_weights(tokenizer, ids, CALL, 4.0)
    assert len(weights) == len(ids) and set(weights) == {1.0, 4.0}
    stressed = "".join(tokenizer.decode([i]) for i, w in zip(ids, weights, strict=True) if w == 4.0)
    for value in ("mon", "fri", "Gym: legs", "35", "true"):
        assert value in stressed
    assert "clock.set_alarm" not in stressed and "tool_call" not in stressed and "minutes" not in stressed
    assert weights[-1] == 1.0  # the end-of-turn token

    row = tokenize_example(tokenizer, window, "<|im_start|>user\nwake me<|im_end|>\n", CALL, value_weight=4.0)
    prompt = row["completion_mask"].index(1)
    assert row[LOSS_WEIGHT][:prompt] == [0.0] * prompt and row[LOSS_WEIGHT][prompt:] == weights
    assert LOSS_WEIGHT not in tokenize_example(tokenizer, window, "<|im_start|>user\nx<|im_end|>\n", CALL)


def test_the_weighted_loss_is_the_weighted_mean_of_the_labelled_tokens_losses() -> None:
    import torch

    from learner.sft.trainer import completion_loss

    tokenizer = train_tokenizer(corpus(), vocab_size=300)
    model = build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32))
    ids = torch.randint(1, len(tokenizer), (2, 16), generator=torch.Generator().manual_seed(0))
    labels = ids.clone()
    labels[:, :6] = -100
    weights = torch.zeros(2, 16)
    weights[:, 6:] = 1.0
    weights[0, 9] = weights[1, 12] = 5.0
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}

    logits = model(input_ids=ids).logits[:, :-1]
    each = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
    w = weights[:, 1:] * (labels[:, 1:] != -100)
    expected = (each * w).sum() / w.sum()
    assert torch.allclose(completion_loss(model, {**inputs, LOSS_WEIGHT: weights}), expected, atol=1e-5)
    plain = completion_loss(model, inputs)
    assert torch.allclose(completion_loss(model, {**inputs, LOSS_WEIGHT: (weights > 0).float()}), plain, atol=1e-5)
    assert not torch.allclose(expected, plain)


def test_training_with_a_value_weight_runs_the_weighted_loss(tmp_path) -> None:
    rows = [
        Example(f"ep-{i}", f"t-{i}", 0, "tool_use", f"<|im_start|>user\nwake me at {i % 10}:00<|im_end|>\n", CALL, 1.0)
        for i in range(16)
    ]
    tokenizer = train_tokenizer(corpus(), vocab_size=300)

    def loss(weight: float) -> float:
        model = build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32))
        settings = SftSettings(max_steps=2, batch_size=4, logging_steps=1, value_weight=weight)
        return train_sft(model, tokenizer, rows, tmp_path / str(weight), settings=settings).train_loss

    assert loss(4.0) != pytest.approx(loss(1.0), rel=1e-4)
