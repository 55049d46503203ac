"""A Hugging Face checkpoint directory as a user would bring one (``--base-model``), made from a config: a small
Qwen3 network and a BPE tokenizer whose chat template is Llama-3 style, not the tiny model's ChatML."""

from __future__ import annotations

from pathlib import Path

from learner.model.factory import TinyModelConfig, build_tiny_model, save_checkpoint
from learner.model.tokenizer import train_tokenizer

LLAMA_STYLE = (
    "{{ bos_token }}{% if tools %}<|start_header_id|>tools<|end_header_id|>\n\n"
    "{% for tool in tools %}{{ tool['function']['name'] }}\n{% endfor %}<|eot_id|>{% endif %}"
    "{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{{ message['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
SPECIALS = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]


def users_checkpoint(folder: Path) -> Path:
    """A Hugging Face checkpoint directory as a user would have one: weights, tokenizer, its own chat template."""
    corpus = [
        "You operate a user's phone apps through tools. Set an alarm for 07:30 named gym.",
        '<action>{"tool": "clock.set_alarm", "args": {"time": "07:30", "label": "gym"}}</action>',
    ] * 20
    tokenizer = train_tokenizer(corpus, vocab_size=400)
    tokenizer.add_special_tokens({"bos_token": SPECIALS[0], "additional_special_tokens": SPECIALS[1:]})
    tokenizer.chat_template = LLAMA_STYLE
    model = build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32, layers=1, heads=2, kv_heads=1, seed=3))
    return save_checkpoint(model, tokenizer, folder)
