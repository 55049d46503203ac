"""An SFT run keeps a metric history (loss, learning rate, grad norm, tokens/s at every logging step) and prints
nothing raw: transformers' PrinterCallback is replaced by log records."""

from __future__ import annotations

import logging

import pytest

from learner.dataset.build import Example
from learner.model import PromptWindow, TinyModelConfig, build_tiny_model, train_tokenizer
from learner.sft import SftSettings, train_sft

pytestmark = pytest.mark.unit


def examples(n: int) -> list[Example]:
    return [
        Example(
            episode_id=f"ep-{i}",
            task_id=f"task-{i % 3}",
            step=0,
            category="tool_use",
            prompt=f"<|im_start|>user\nset an alarm at {i % 12}:00<|im_end|>\n<|im_start|>assistant\n",
            completion=f'<action>{{"kind": "tool", "name": "clock.set_alarm", "hour": {i % 12}}}</action><|im_end|>',
            weight=1.0,
        )
        for i in range(n)
    ]


def test_each_logging_step_is_a_history_row_and_a_log_record_not_a_printed_dict(tmp_path, capsys, caplog):
    rows = examples(24)
    tokenizer = train_tokenizer([e.prompt + e.completion for e in rows] * 4, vocab_size=300)
    model = build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32))
    settings = SftSettings(max_steps=6, batch_size=4, logging_steps=2, learning_rate=3e-3)
    with caplog.at_level(logging.INFO, logger="flywheel.learner.sft"):
        result = train_sft(model, tokenizer, rows, tmp_path / "ckpt", settings=settings, window=PromptWindow())
    assert [step for step, _ in result.history] == [2, 4, 6]
    for _, values in result.history:
        assert set(values) >= {"loss", "learning_rate", "grad_norm", "tokens_per_s", "tokens_seen"}
        assert values["loss"] > 0 and values["tokens_per_s"] > 0
    seen = [values["tokens_seen"] for _, values in result.history]
    assert seen == sorted(seen) and seen[0] > 0  # a running count of the tokens trained on
    printed = capsys.readouterr()
    assert "{'loss'" not in printed.out + printed.err
    assert sum(": loss=" in r.getMessage() for r in caplog.records if r.name == "flywheel.learner.sft") == 3


def test_the_completion_only_loss_equals_the_models_own_loss_over_full_logits():
    """The trainer applies the LM head to the labelled positions only; the loss and its gradients must be the
    model's own (``labels`` with -100 on prompt and padding positions)."""
    import torch

    from learner.sft.trainer import completion_loss

    rows = examples(6)
    tokenizer = train_tokenizer([e.prompt + e.completion for e in rows] * 4, vocab_size=300)
    model = build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32))
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1, len(tokenizer), (3, 24), generator=generator)
    mask = torch.ones_like(ids)
    mask[2, 17:] = 0
    labels = ids.clone()
    labels[:, :10] = -100
    labels[2, 17:] = -100
    inputs = {"input_ids": ids, "attention_mask": mask, "labels": labels}

    reference = model(**inputs).loss
    reference.backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ours = completion_loss(model, inputs, num_items_in_batch=(labels[:, 1:] != -100).sum())
    ours.backward()

    assert torch.allclose(ours, reference, atol=1e-5)
    for p, grad in zip(model.parameters(), expected, strict=True):
        assert torch.allclose(p.grad, grad, atol=1e-6)
    assert not torch.allclose(completion_loss(model, {**inputs, "labels": ids}), reference)
