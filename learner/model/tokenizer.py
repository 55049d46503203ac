"""A byte-level BPE tokenizer trained on our own task/tool corpus, with ChatML specials (no hub download)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

IM_START, IM_END, PAD = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML, byte-identical to ``harness_service.context.messages.render_messages``."""


def train_tokenizer(
    texts: Iterable[str], vocab_size: int = 2048, extra_special: Sequence[str] = ()
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on ``texts``; deterministic for the same corpus and size. ``extra_special``: more
    special tokens, each one id (the value slots of ``learner.model.value_slots``)."""
    core = Tokenizer(models.BPE())
    # one token per digit (as Qwen does): times, dates and amounts are copied digit by digit, which a tiny
    # model learns far sooner than copying hundreds of merged number tokens
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, IM_START, IM_END, *extra_special],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=None,
        eos_token=IM_END,
        pad_token=PAD,
        unk_token=None,
        additional_special_tokens=list(extra_special),
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer
