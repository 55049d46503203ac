"""The tiny planner's pointer head: a proper distribution, incremental decoding equal to one pass, the SFT loss on
its mixture, a checkpoint that loads back, and copying a value the vocabulary head never produced in training."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from transformers import Qwen3Config, Qwen3ForCausalLM  # noqa: E402

from harness_service.context.messages import ChatMessage  # noqa: E402
from learner.dataset.build import Example  # noqa: E402
from learner.model.copy_head import CopyHeadConfig, CopyHeadForCausalLM, ValueLexer  # noqa: E402
from learner.model.factory import TinyModelConfig, build_tiny_model, load_checkpoint, save_checkpoint  # noqa: E402
from learner.model.policy import PlannerPolicy  # noqa: E402
from learner.model.tokenizer import train_tokenizer  # noqa: E402
from learner.model.window import PromptWindow  # noqa: E402
from learner.sft import SftSettings, train_sft  # noqa: E402
from learner.sft.trainer import completion_loss  # noqa: E402

pytestmark = pytest.mark.unit

SMALL = TinyModelConfig(hidden_size=32, intermediate_size=64, copy_head=True, copy_dim=16)
CORPUS = ["Pay Nora Acheampong 20 dollars for lunch", "Set an alarm at 07:30 named gym", "Call Bea Okafor"] * 10
TURNS = (
    "<|im_start|>system\nTools: pay<|im_end|>\n"
    '<|im_start|>user\nPay Nora Acheampong 20 dollars {"to":"Bea"}<|im_end|>\n'
    '<|im_start|>assistant\n<action>{"kind":"tool_call","name":"pay","args":{"to":"Nora Acheampong"}}</action>'
)


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(CORPUS, vocab_size=300)


def test_logits_are_log_probs_and_decoding_with_a_cache_equals_one_pass(tokenizer) -> None:
    model = build_tiny_model(tokenizer, SMALL).eval()
    assert isinstance(model, CopyHeadForCausalLM)
    ids = torch.tensor([tokenizer(TURNS)["input_ids"]])
    with torch.no_grad():
        full = model(input_ids=ids).logits
        assert torch.allclose(full.exp().sum(-1), torch.ones(ids.shape), atol=1e-4)
        out = model(input_ids=ids[:, :3], use_cache=True)
        steps = [out.logits]
        for t in range(3, ids.shape[1]):
            out = model(input_ids=ids[:, t : t + 1], past_key_values=out.past_key_values, use_cache=True)
            steps.append(out.logits)
    assert torch.allclose(torch.cat(steps, 1), full, atol=1e-5)


def test_the_user_turns_before_the_one_being_written_are_the_copy_sources(tokenizer) -> None:
    """The user turn's tokens are copy sources for the assistant's; the system turn's (tool names, keys), the
    assistant's own (copying its own output only loops), and any before the first turn, are not."""
    model = build_tiny_model(tokenizer, SMALL)
    ids = torch.tensor([tokenizer(TURNS)["input_ids"]])
    system, user, assistant = (ids[0] == model.config.copy_turn_token_id).nonzero().flatten().tolist()
    sources = model.copy_sources(ids, torch.ones_like(ids, dtype=torch.bool), torch.arange(ids.shape[1]))[0]
    last = ids.shape[1] - 1
    assert sources[last, user:assistant].all()
    assert not sources[last, :user].any() and not sources[last, assistant:].any()
    assert not sources[user - 1].any() and not sources[assistant - 1].any()  # nothing before the user turn ends
    padded = model.copy_sources(ids, ids != ids[0, user + 3], torch.arange(ids.shape[1]))[0]
    assert not padded[last, user + 3] and padded[last, user + 2]  # a masked (padding) position is never a source


@pytest.mark.parametrize(
    ("text", "inside"),
    [
        ('<action>{"kind":"tool_c', False),
        ('<action>{"kind":"tool_call","name":"contacts.sea', False),
        ('{"kind":"tool_call","name":"pay","args":{"query":"', True),
        ('{"kind":"tool_call","name":"pay","args":{"query":"Nora Ach', True),
        ('{"kind":"tool_call","name":"pay","args":{"query":"Nora"', False),
        ('{"kind":"tool_call","name":"pay","args":{"query":"Nora","li', False),
        ('{"kind":"finish","answer": "It is \\"Rome', True),
        ('{"args":{"days":["mon","tu', False),
        ('{"args":{"days":["mon"],"label":"Wake', True),
    ],
)
def test_the_lexer_tells_a_values_string_from_keys_kinds_and_tool_names(text: str, inside: bool) -> None:
    lexer = ValueLexer()
    for piece in (text[:5], text[5:9], text[9:]):  # fed in pieces, as tokens come
        lexer.feed(piece)
    assert lexer.in_value() is inside


def test_only_a_value_of_the_turn_being_written_opens_the_copy_gate(tokenizer) -> None:
    """The gate is open where the next token is the value "Nora Acheampong" or its closing quote; not on the
    action's syntax, kind or tool name, and not on the user turn's own JSON value ("Bea")."""
    model = build_tiny_model(tokenizer, SMALL)
    ids = torch.tensor([tokenizer(TURNS)["input_ids"]])
    gate = model.copy_gate_open(ids, torch.arange(ids.shape[1]))[0]
    copyable = "".join(tokenizer.decode(ids[0, i + 1]) for i in gate.nonzero().flatten().tolist())
    assert copyable.startswith('Nora Acheampong"') and copyable.count('"') == 1
    assistant = (ids[0] == model.config.copy_turn_token_id).nonzero().flatten()[-1]
    assert not gate[:assistant].any()


def test_the_sft_loss_is_the_models_own_loss_on_the_mixture(tokenizer) -> None:
    model = build_tiny_model(tokenizer, SMALL)
    rows = [
        tokenizer(f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n{text}")["input_ids"]
        for text in CORPUS[:3]
    ]
    width = max(map(len, rows))
    ids = torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :2] = -100  # a "prompt" that is not trained on
    inputs = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    own = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    assert torch.allclose(completion_loss(model, inputs), own, atol=1e-5)


def test_a_saved_copy_head_checkpoint_loads_back_and_decodes_the_same(tokenizer, tmp_path: Path) -> None:
    model = build_tiny_model(tokenizer, SMALL)
    folder = save_checkpoint(model, tokenizer, tmp_path / "ck")
    PromptWindow(max_prompt_tokens=64, max_new_tokens=8).save(folder)
    loaded, _ = load_checkpoint(folder)
    assert isinstance(loaded, CopyHeadForCausalLM)
    ids = torch.tensor([tokenizer(TURNS)["input_ids"]])
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=ids).logits, model.eval()(input_ids=ids).logits)
    messages = [ChatMessage(role="user", content=CORPUS[2])]
    window = PromptWindow(max_prompt_tokens=64, max_new_tokens=8)
    fresh = PlannerPolicy(model, tokenizer, name="a", window=window).generate(messages)
    assert PlannerPolicy.from_dir(folder, name="b").generate(messages).text == fresh.text


def _copy_task(names: list[str], rng: random.Random) -> tuple[list[int], int]:
    """Filler tokens with one name right after ``MARKER``, then ``QUERY``; the target is that name."""
    prompt = [rng.choice(FILLER) for _ in range(6)]
    at = rng.randrange(1, 5)
    name = rng.choice(names)
    prompt[at], prompt[at + 1] = MARKER, name
    return [*prompt, QUERY], name


VOCAB = 120
MARKER, QUERY = 1, 2
FILLER = list(range(3, 20))
TRAIN_NAMES, NEW_NAMES = list(range(20, 70)), list(range(70, 120))


def _accuracy_on_new_names(copy_head: bool) -> float:
    """Greedy accuracy on 200 prompts whose name was never a training target, after 300 steps on the others."""
    torch.manual_seed(0)
    sizes = dict(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
        head_dim=16, intermediate_size=64, max_position_embeddings=16, tie_word_embeddings=True,
    )  # fmt: skip
    model = (
        CopyHeadForCausalLM(CopyHeadConfig(copy_dim=16, **sizes))
        if copy_head
        else Qwen3ForCausalLM(Qwen3Config(**sizes))
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    rng = random.Random(0)
    for _ in range(300):
        batch = [_copy_task(TRAIN_NAMES, rng) for _ in range(32)]
        ids = torch.tensor([[*p, n] for p, n in batch])
        labels = torch.full_like(ids, -100)
        labels[:, -1] = ids[:, -1]
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    tests = [_copy_task(NEW_NAMES, random.Random(i)) for i in range(200)]
    with torch.no_grad():
        logits = model.eval()(input_ids=torch.tensor([p for p, _ in tests])).logits[:, -1]
    return float((logits.argmax(-1) == torch.tensor([n for _, n in tests])).float().mean())


def test_the_copy_head_copies_names_it_never_wrote_in_training_and_the_plain_head_does_not() -> None:
    """Names 20-69 are trained targets; 70-119 only ever appear in test prompts. The pointer picks the token after
    the marker whatever it is; the vocabulary head has only learned to write the names it was trained on."""
    copied = _accuracy_on_new_names(copy_head=True)
    plain = _accuracy_on_new_names(copy_head=False)
    assert copied >= 0.9, copied
    assert plain <= 0.2, plain


def test_sft_trains_the_copy_head_and_saves_a_checkpoint_that_loads_as_one(tokenizer, tmp_path: Path) -> None:
    """trl's trainer goes through the mixture (value-weighted): the pointer's weights move, and the saved
    checkpoint is a copy-head model again."""
    call = '<action>{"kind":"tool_call","name":"pay","args":{"to":"Nora Acheampong"}}</action>'
    prompt = "<|im_start|>user\nPay Nora Acheampong 20 dollars<|im_end|>\n"
    rows = [Example(f"ep-{i}", f"t-{i}", 0, "tool_use", prompt, call, 1.0) for i in range(8)]
    model = build_tiny_model(tokenizer, SMALL)
    before = model.copy_query.weight.detach().clone()
    settings = SftSettings(max_steps=2, batch_size=4, logging_steps=1, value_weight=4.0)
    result = train_sft(model, tokenizer, rows, tmp_path / "ck", settings=settings)
    assert torch.isfinite(torch.tensor(result.train_loss))
    assert not torch.equal(model.copy_query.weight.detach(), before)
    assert isinstance(load_checkpoint(tmp_path / "ck")[0], CopyHeadForCausalLM)
