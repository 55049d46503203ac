"""Tokenizes examples for training: the windowed prompt is context, only the model's own output carries loss."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from learner.dataset.build import Example
from learner.dataset.value_weights import value_weights
from learner.model.policy import PromptWindow

LOSS_WEIGHT = "loss_weight"
"""The column of per-token loss weights (0 on the prompt), present when values are weighted (``value_weight``)."""


def tokenize_example(
    tokenizer: Any,
    window: PromptWindow,
    prompt: str,
    completion: str,
    completion_ids: list[int] | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
    value_weight: float = 1.0,
) -> dict[str, Any]:
    """``input_ids`` and a ``completion_mask`` (1 on the output and its ``<|im_end|>``, 0 on the prompt).

    ``completion_ids``: the ids the policy actually sampled (else the completion text is tokenized). ``tools``: the
    step's function schemas, rendered as the policy renders them (``PromptWindow.native_tools``). ``value_weight``
    other than 1: a ``loss_weight`` column too, ``value_weight`` on the tokens of the action's values (a call's
    arguments, a memory query, an answer: ``learner.dataset.value_weights``), 1 on the rest of the output, 0 on the
    prompt.
    """
    prompt_ids = window.prompt_ids(tokenizer, prompt, tools)
    completion = window.written(prompt, completion)
    if completion_ids is None:
        completion_ids = window.completion_ids(tokenizer, completion)
    row: dict[str, Any] = {
        "input_ids": prompt_ids + completion_ids,
        "completion_mask": [0] * len(prompt_ids) + [1] * len(completion_ids),
    }
    if value_weight != 1.0:
        row[LOSS_WEIGHT] = [0.0] * len(prompt_ids) + value_weights(tokenizer, completion_ids, completion, value_weight)
    return row


def tokenize_examples(  # noqa: ANN201
    tokenizer: Any, window: PromptWindow, examples: Sequence[Example], value_weight: float = 1.0
):
    """A ``datasets.Dataset`` with ``input_ids`` and ``completion_mask`` (what SFTTrainer takes pre-tokenized).

    An example appears ``example.repeats`` times: curation and sampling weights as repetition.
    """
    from datasets import Dataset

    rows = []
    for example in examples:
        row = tokenize_example(
            tokenizer, window, example.prompt, example.completion, tools=example.functions(), value_weight=value_weight
        )
        rows.extend([row] * example.repeats)
    return Dataset.from_list(rows)
