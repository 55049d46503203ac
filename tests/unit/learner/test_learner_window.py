"""The prompt window keeps the task turn and the newest turns, and is saved with the checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_service.context.messages import ChatMessage, render_messages, split_turns
from learner.model import PromptWindow, train_tokenizer
from learner.model.window import WINDOW_FILE, turn_corpus

pytestmark = pytest.mark.unit

SYSTEM = "You operate phone apps. " + "## contacts.update_phone (writes) Change a phone number. " * 40
GOAL = "# Task\nZelda Quorn has a new phone number, +1-555-9137. Update their contact card."


def conversation(steps: int) -> str:
    messages = [ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=GOAL)]
    for k in range(steps):
        messages.append(ChatMessage(role="assistant", content=f'<action>{{"kind":"tool_call","step":{k}}}</action>'))
        messages.append(ChatMessage(role="user", content=f'Observation (step {k + 1}):\n{{"ok":true,"id":"c_{k}"}}'))
    return render_messages(messages)


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(list(turn_corpus(conversation(6) for _ in range(3))), vocab_size=400)


def test_the_goal_stays_in_view_after_many_steps_and_the_newest_turn_ends_the_prompt(tokenizer) -> None:
    window = PromptWindow(max_prompt_tokens=96, goal_tokens=40)
    text = conversation(12)
    ids = window.prompt_ids(tokenizer, text)
    shown = tokenizer.decode(ids)
    assert len(ids) <= 96
    assert shown.startswith("<|im_start|>user\n# Task\nZelda Quorn has a new phone number, +1-555-9137.")
    assert shown.endswith('Observation (step 12):\n{"ok":true,"id":"c_11"}<|im_end|>\n<|im_start|>assistant\n')
    assert "operate phone apps" not in shown  # the system turn is dropped
    newest_only = tokenizer.decode(PromptWindow(max_prompt_tokens=96).prompt_ids(tokenizer, text))
    assert "Zelda" not in newest_only and newest_only.endswith("<|im_start|>assistant\n")


def test_goal_turn_is_cut_to_its_budget_and_the_rest_fills_the_window(tokenizer) -> None:
    window = PromptWindow(max_prompt_tokens=64, goal_tokens=8)
    ids = window.prompt_ids(tokenizer, conversation(12))
    goal_ids = tokenizer.encode("<|im_start|>user\n" + GOAL + "<|im_end|>\n", add_special_tokens=False)
    assert ids[:8] == goal_ids[:8] and len(ids) == 64
    first_step = window.prompt_ids(tokenizer, conversation(0))
    assert first_step == goal_ids[:8] + tokenizer.encode("<|im_start|>assistant\n", add_special_tokens=False)


def test_without_goal_tokens_the_window_is_the_newest_tokens(tokenizer) -> None:
    text = conversation(5)
    expected = tokenizer.encode(text + "<|im_start|>assistant\n", add_special_tokens=False)[-50:]
    assert PromptWindow(max_prompt_tokens=50).prompt_ids(tokenizer, text) == expected


def test_turns_split_and_join_back_and_the_corpus_counts_each_turn_once() -> None:
    text = conversation(3)
    turns = split_turns(text)
    assert "".join(turns) == text and all(t.startswith("<|im_start|>") for t in turns)
    corpus = list(turn_corpus([text, text, conversation(4)]))
    assert len(corpus) == len(set(corpus)) == len(split_turns(conversation(4)))


def test_window_round_trips_with_the_checkpoint_and_old_files_load(tmp_path: Path) -> None:
    window = PromptWindow(max_prompt_tokens=192, max_new_tokens=48, goal_tokens=64)
    window.save(tmp_path)
    assert PromptWindow.load(tmp_path) == window
    (tmp_path / WINDOW_FILE).write_text(json.dumps({"max_prompt_tokens": 128, "max_new_tokens": 64}))
    assert PromptWindow.load(tmp_path).goal_tokens == 0
    with pytest.raises(ValueError, match="goal_tokens"):
        PromptWindow(max_prompt_tokens=64, goal_tokens=64)


def test_system_tokens_keep_the_head_of_the_system_turn_before_the_goal(tokenizer) -> None:
    window = PromptWindow(max_prompt_tokens=128, goal_tokens=32, system_tokens=24)
    ids = window.prompt_ids(tokenizer, conversation(12))
    system_ids = tokenizer.encode("<|im_start|>system\n" + SYSTEM + "<|im_end|>\n", add_special_tokens=False)
    goal_ids = tokenizer.encode("<|im_start|>user\n" + GOAL + "<|im_end|>\n", add_special_tokens=False)
    assert ids[:24] == system_ids[:24] and ids[24:56] == goal_ids[:32] and len(ids) == 128
    assert tokenizer.decode(ids).endswith("<|im_start|>assistant\n")
    with pytest.raises(ValueError, match="system_tokens"):
        PromptWindow(max_prompt_tokens=64, goal_tokens=0, system_tokens=8)
    with pytest.raises(ValueError, match="system_tokens"):
        PromptWindow(max_prompt_tokens=64, goal_tokens=32, system_tokens=32)
