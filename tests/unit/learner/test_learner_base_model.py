"""A checkpoint the user brings (``--base-model``): its own chat template, full fine-tuning and LoRA, on CPU.

The checkpoint is made here from a config: a small Qwen3 network and a BPE tokenizer whose chat template is
Llama-3 style (``<|start_header_id|>role<|end_header_id|>`` ... ``<|eot_id|>``), not the tiny model's ChatML, so
every assertion below fails if anything still renders ChatML or stops on ``<|im_end|>``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner
from user_checkpoint import LLAMA_STYLE, users_checkpoint

from harness_service.actions.native import function_tools
from harness_service.context.messages import ChatMessage, parse_messages, render_messages
from infra.bootstrap import Ports
from infra.cli.main import app
from learner.config import LearnerConfig, for_base_model, tiny_harness
from learner.dataset.tokenize import tokenize_example
from learner.jobs import current_dataset, run_rl, run_sft, seed_reference_episodes
from learner.model import PlannerPolicy
from learner.model.lora import LoraSettings
from learner.model.tokenizer import train_tokenizer
from learner.model.window import PromptWindow, end_of_turn
from learner.rl.services import LocalServices
from producers.backends.base import ToolSpec

pytestmark = pytest.mark.unit

RUN = "run-base"


def base_config(checkpoint: Path, work: Path, lora: LoraSettings | None = None) -> LearnerConfig:
    """``for_base_model`` as ``--base-model`` sets it, made small for CPU: tool_use at difficulty 1, the compact
    harness (with the native call syntax ``for_base_model`` chose), a 768-token window and a few steps."""
    config = for_base_model(
        LearnerConfig(
            cold_start_seeds=1,
            train_categories=("tool_use",),
            max_difficulty=1,
            dev_per_category=1,
            work_dir=work,
        ),
        checkpoint,
        lora=lora,
    )
    return config.model_copy(
        update={
            "harness": tiny_harness().model_copy(update={"action_syntax": config.harness.action_syntax}),
            "max_prompt_tokens": 768,
            "max_new_tokens": 24,
            "sft": config.sft.model_copy(update={"max_steps": 3, "batch_size": 4, "learning_rate": 5e-3}),
        }
    )


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def test_the_prompt_is_rendered_with_the_checkpoints_own_template_and_ends_on_its_end_of_turn(tmp_path: Path) -> None:
    checkpoint = users_checkpoint(tmp_path / "user-model")
    tokenizer = PlannerPolicy.from_dir(checkpoint).tokenizer
    eot = tokenizer.convert_tokens_to_ids("<|eot_id|>")
    assert end_of_turn(tokenizer) == eot
    window = PromptWindow(max_prompt_tokens=4096, max_new_tokens=8, chat_template=True)
    messages = [
        ChatMessage(role="system", content="Tools: clock.set_alarm"),
        ChatMessage(role="user", content="Set an alarm for 07:30."),
    ]
    text = tokenizer.decode(window.prompt_ids(tokenizer, render_messages(messages)))
    rendered = tokenizer.apply_chat_template(
        [m.model_dump() for m in messages], tokenize=False, add_generation_prompt=True
    )
    assert text == rendered
    assert "<|im_start|>" not in text and text.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    assert window.completion_ids(tokenizer, "<action>x</action>")[-1] == eot == window.end_id(tokenizer)
    assert PromptWindow().end_id(train_tokenizer(["a b"], vocab_size=300)) != eot  # ChatML stays the default

    history = [ChatMessage(role=r, content=f"{r} turn {i} " * 20) for i in range(6) for r in ("assistant", "user")]
    long = render_messages([*messages, *history])
    newest_two = window.prompt_ids(tokenizer, render_messages([*messages, *history[-4:]]))
    assert len(window.prompt_ids(tokenizer, long)) > len(newest_two) + 10
    tight = PromptWindow(max_prompt_tokens=len(newest_two) + 10, max_new_tokens=8, chat_template=True)
    assert tight.prompt_ids(tokenizer, long) == newest_two
    kept = tokenizer.decode(newest_two)
    assert kept.startswith("<|begin_of_text|><|start_header_id|>system") and "Set an alarm for 07:30." in kept
    assert "user turn 5" in kept and "turn 3" not in kept  # whole old turns dropped; the task and newest kept
    for budget in range(len(newest_two) - 5, len(window.prompt_ids(tokenizer, long)) + 5, 7):  # bisection = one by one
        every = [m.model_dump() for m in [*messages, *history]]
        while True:
            text = tokenizer.apply_chat_template(every, tokenize=False, add_generation_prompt=True)
            ids = tokenizer.encode(text, add_special_tokens=False)
            if len(ids) <= budget or len(every) - 2 < 4:
                break
            del every[2:4]
        cut = PromptWindow(max_prompt_tokens=budget, max_new_tokens=8, chat_template=True)
        assert cut.prompt_ids(tokenizer, long) == list(ids)[-budget:], budget
    with pytest.raises(ValueError, match="goal_tokens"):
        PromptWindow(max_prompt_tokens=512, goal_tokens=64, chat_template=True)


def test_native_tools_reach_the_template_in_training_and_in_decoding_alike(tmp_path: Path) -> None:
    """With ``native_tools`` the step's tools go to the template's ``tools`` (its own tool block, as a server renders
    a request's ``tools``); the policy decodes on exactly the ids a training example of that step gets."""
    checkpoint = users_checkpoint(tmp_path / "user-model")
    plain = PlannerPolicy.from_dir(checkpoint, window=PromptWindow(max_prompt_tokens=512, chat_template=True))
    native_window = PromptWindow(max_prompt_tokens=512, max_new_tokens=4, chat_template=True, native_tools=True)
    native = PlannerPolicy.from_dir(checkpoint, window=native_window)
    tools = [ToolSpec(name="clock.set_alarm", description="Set an alarm.", parameters={"type": "object"})]
    messages = [ChatMessage(role="user", content="Set an alarm for 07:30 named gym.")]
    with_tools = native.generate_with_tools(messages, tools).sampled
    without = plain.generate_with_tools(messages, tools).sampled
    assert with_tools is not None and without is not None
    shown = native.tokenizer.decode(with_tools.prompt_ids)
    assert "<|start_header_id|>tools<|end_header_id|>" in shown and "clock.set_alarm" in shown
    assert "tools<|end_header_id|>" not in plain.tokenizer.decode(without.prompt_ids)
    functions = function_tools(tools)
    assert {f["function"]["name"] for f in functions} >= {"clock.set_alarm", "finish"}  # the actions too
    trained = tokenize_example(native.tokenizer, native_window, render_messages(messages), "x", tools=functions)
    assert trained["input_ids"][: len(with_tools.prompt_ids)] == list(with_tools.prompt_ids)
    with pytest.raises(ValueError, match="native_tools"):
        PromptWindow(native_tools=True)


def test_parse_messages_inverts_render_messages_and_rejects_other_text() -> None:
    messages = [ChatMessage(role="system", content="a\n<b>"), ChatMessage(role="assistant", content="")]
    assert parse_messages(render_messages(messages)) == messages
    with pytest.raises(ValueError, match="not a ChatML"):
        parse_messages("<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>")


def test_a_users_checkpoint_trains_fully_and_with_lora_and_keeps_its_template(
    embedded_ports: Ports, tmp_path: Path
) -> None:
    checkpoint = users_checkpoint(tmp_path / "user-model")
    base = weights(checkpoint)
    full = base_config(checkpoint, tmp_path / "work")
    assert seed_reference_episodes(embedded_ports, full, run_id=RUN) == 72

    trained = run_sft(embedded_ports, full, run_id=RUN)
    tuned = weights(trained.checkpoint)
    assert set(tuned) == set(base)
    assert all(not torch.equal(tuned[k], base[k]) for k in base if k.endswith("q_proj.weight"))
    assert not torch.equal(tuned["model.embed_tokens.weight"], base["model.embed_tokens.weight"])
    saved = json.loads((trained.checkpoint / "prompt_window.json").read_text())
    assert saved["chat_template"] and saved["native_tools"] and saved["max_prompt_tokens"] == 768
    examples = current_dataset(embedded_ports, full).examples
    assert examples and all(e.functions() for e in examples)
    # the demonstrations are native function calls, the format the checkpoint's template was made for
    assert full.harness.action_syntax == "tool_call"
    assert all(re.fullmatch(r"<tool_call>\n\{.*\}\n</tool_call>", e.completion, re.S) for e in examples)
    assert any('"name": "finish"' in e.completion for e in examples)
    actions = {f["function"]["name"] for f in function_tools([])}
    listed = [set(re.findall(r"^- ([\w.]+)\(", e.prompt, re.M)) for e in examples]  # the compact turn's tool lines
    assert len({frozenset(names) for names in listed}) > 1  # the steps show different tools
    for example, names in zip(examples, listed, strict=True):  # each step's own tools, as the harness offered them
        assert {f["function"]["name"] for f in example.functions()} - actions == names  # type: ignore[index]
    policy = PlannerPolicy.from_dir(trained.checkpoint)
    assert policy.tokenizer.chat_template == LLAMA_STYLE  # the user's template, not replaced by ChatML
    out = policy.generate([ChatMessage(role="user", content="Set an alarm for 07:30 named gym.")])
    assert out.sampled is not None and "<|start_header_id|>" in policy.tokenizer.decode(out.sampled.prompt_ids)
    assert out.sampled.completion_ids[-1] == end_of_turn(policy.tokenizer) or len(out.sampled.completion_ids) == 24

    lora = base_config(checkpoint, tmp_path / "work-lora", lora=LoraSettings(rank=4, alpha=8))
    adapted = run_sft(embedded_ports, lora, run_id=RUN, round=1)
    merged = weights(adapted.checkpoint)
    assert set(merged) == set(base), "saved merged: no adapter weights, the plain model's names"
    assert not any("lora" in k for k in merged)
    assert torch.equal(merged["model.embed_tokens.weight"], base["model.embed_tokens.weight"])  # frozen under LoRA
    assert any(not torch.equal(merged[k], base[k]) for k in base if k.endswith("q_proj.weight"))
    params = embedded_ports.registry.get_run(
        embedded_ports.registry.resolve(f"planner/{adapted.model_version}").run_id or ""
    ).params
    assert params["learning_rate"] == "0.005"

    services = LocalServices(embedded_ports, tmp_path / "services")
    try:
        rl, reports = run_rl(
            embedded_ports, lora, adapted.model_version, steps=1, run_id=RUN, round=2, pump=services.pump
        )
    finally:
        services.close()
    assert reports[0].episodes == lora.rl.tasks_per_step * lora.rl.group_size
    after = weights(rl.checkpoint)
    assert set(after) == set(base) and torch.equal(
        after["model.embed_tokens.weight"], base["model.embed_tokens.weight"]
    )


def test_the_cli_trains_a_users_checkpoint_with_lora(embedded_ports: Ports, tmp_path: Path) -> None:
    checkpoint = users_checkpoint(tmp_path / "user-model")
    seeded = base_config(checkpoint, tmp_path / "work").model_copy(update={"harness": tiny_harness()})
    seed_reference_episodes(embedded_ports, seeded, run_id=RUN)  # `flywheel train seed`: the tiny harness's demos
    args = [
        "train",
        "sft",
        f"--bus=sqlite:///{tmp_path}/bus.db",
        f"--blobs=file:///{tmp_path}/blobs",
        f"--registry=sqlite:///{tmp_path}/mlflow.db",
        f"--work-dir={tmp_path / 'cli-work'}",
        f"--base-checkpoint={checkpoint}",
        "--lora",
        "--lora-rank=2",
        "--max-steps=1",
        f"--run-id={RUN}",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    ref = embedded_ports.registry.resolve("planner@candidate")
    params = embedded_ports.registry.get_run(ref.run_id or "").params
    assert params["learning_rate"] == "0.0002" and params["max_prompt_tokens"] == "4096"
    folder = next((tmp_path / "cli-work").glob("sft-*"))
    assert not any("lora" in k for k in weights(folder)) and PromptWindow.load(folder).chat_template

    wide = {"COLUMNS": "400"}  # the error box would wrap the path
    missing = CliRunner().invoke(app, ["run", f"--base-model={tmp_path / 'nowhere'}", "--rounds=1"], env=wide)
    assert missing.exit_code != 0 and "nowhere" in missing.output
