"""The tiny model and tokenizer: ChatML template identical to the harness rendering, lossless save/load, no hub."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from harness_service.context.messages import ChatMessage, render_messages
from infra.cli.train import app
from learner.model import (
    PlannerPolicy,
    PromptWindow,
    TinyModelConfig,
    build_tiny_model,
    load_checkpoint,
    save_checkpoint,
    train_tokenizer,
)

pytestmark = pytest.mark.unit
CORPUS = ['Set an alarm for 17:35. <action>{"kind": "tool_call", "name": "clock.set_alarm"}</action>'] * 30


def test_chat_template_renders_exactly_what_the_harness_renders() -> None:
    tokenizer = train_tokenizer(CORPUS, vocab_size=400)
    messages = [ChatMessage(role="system", content="tools"), ChatMessage(role="user", content="Set an alarm")]
    as_dicts = [m.model_dump() for m in messages]
    assert tokenizer.apply_chat_template(as_dicts, tokenize=False) == render_messages(messages)
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") == tokenizer.eos_token_id
    assert [tokenizer.decode([t]) for t in tokenizer.encode("17:35", add_special_tokens=False)] == list("17:35")


def test_checkpoint_round_trips_with_identical_logits(tmp_path: Path) -> None:
    tokenizer = train_tokenizer(CORPUS, vocab_size=400)
    model = build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32, layers=1))
    ids = torch.tensor([tokenizer.encode(CORPUS[0], add_special_tokens=False)])
    save_checkpoint(model, tokenizer, tmp_path / "ckpt")
    loaded, loaded_tokenizer = load_checkpoint(tmp_path / "ckpt")
    assert torch.equal(model.eval()(ids).logits, loaded.eval()(ids).logits)
    assert loaded_tokenizer.encode(CORPUS[0]) == tokenizer.encode(CORPUS[0])
    with pytest.raises(FileNotFoundError, match="not a checkpoint"):
        load_checkpoint(tmp_path)


def test_policy_prompts_with_the_newest_window_and_stops_at_the_budget() -> None:
    tokenizer = train_tokenizer(CORPUS, vocab_size=400)
    model = build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32, layers=1))
    policy = PlannerPolicy(
        model, tokenizer, name="planner/1", window=PromptWindow(max_prompt_tokens=20, max_new_tokens=5)
    )
    out = policy.generate([ChatMessage(role="user", content=CORPUS[0] * 5)])
    assert out.input_tokens == 20 and out.output_tokens <= 5


def test_cli_commands_have_help() -> None:
    runner = CliRunner()
    for command in (["--help"], ["sft", "--help"], ["rl", "--help"], ["seed", "--help"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 0, result.output
    assert "@candidate" in runner.invoke(app, ["sft", "--help"]).output
    orphan = runner.invoke(app, ["sft", "--parent-merge", "0.5"])  # nothing to merge with: refused before any work
    assert orphan.exit_code == 2 and "--base-version" in orphan.output


def test_sampled_turns_record_the_exact_ids_that_rl_then_trains_on() -> None:
    from learner.dataset.tokenize import tokenize_example
    from learner.model.policy import sample_key

    tokenizer = train_tokenizer(CORPUS, vocab_size=400)
    model = build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32, layers=1))
    sampled: dict[str, list[int]] = {}
    window = PromptWindow(max_prompt_tokens=32, max_new_tokens=12)
    policy = PlannerPolicy(model, tokenizer, name="planner/1", window=window, temperature=1.5, seed=3, sampled=sampled)
    messages = [ChatMessage(role="user", content="Set an alarm for 17:35.")]
    outputs = [policy.generate(messages) for _ in range(4)]
    rendered = render_messages(messages)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for out in outputs:
        ids = sampled[sample_key(rendered, out.text)]
        assert tokenizer.decode([t for t in ids if t != end], skip_special_tokens=True) == out.text
        assert len(ids) - (ids[-1] == end) == out.output_tokens <= 12
        row = tokenize_example(tokenizer, window, rendered, out.text, ids)
        assert [t for t, m in zip(row["input_ids"], row["completion_mask"], strict=True) if m] == ids
