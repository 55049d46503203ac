"""Tokenizes examples for training: the windowed prompt is context, only the model's own output carries loss."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from learner.dataset.build import Example
from learner.model.policy import PromptWindow


def tokenize_example(
    tokenizer: Any,
    window: PromptWindow,
    prompt: str,
    completion: str,
    completion_ids: list[int] | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
) -> dict[str, list[int]]:
    """``input_ids`` and a ``completion_mask`` (1 on the output and its ``<|im_end|>``, 0 on the prompt).

    ``completion_ids``: the ids the policy actually sampled (else the completion text is tokenized). ``tools``: the
    step's function schemas, rendered as the policy renders them (``PromptWindow.native_tools``).
    """
    prompt_ids = window.prompt_ids(tokenizer, prompt, tools)
    if completion_ids is None:
        completion_ids = window.completion_ids(tokenizer, completion)
    return {
        "input_ids": prompt_ids + completion_ids,
        "completion_mask": [0] * len(prompt_ids) + [1] * len(completion_ids),
    }


def tokenize_examples(tokenizer: Any, window: PromptWindow, examples: Sequence[Example]):  # noqa: ANN201
    """A ``datasets.Dataset`` with ``input_ids`` and ``completion_mask`` (what SFTTrainer takes pre-tokenized).

    An example of weight w appears round(w) times (at least once): curation and sampling weights as repetition.
    """
    from datasets import Dataset

    rows = []
    for example in examples:
        row = tokenize_example(tokenizer, window, example.prompt, example.completion, tools=example.functions())
        rows.extend([row] * max(1, round(example.weight)))
    return Dataset.from_list(rows)
