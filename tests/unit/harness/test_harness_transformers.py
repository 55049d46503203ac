"""A tiny Qwen3-architecture model (random weights, a tokenizer trained here) runs episodes on CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the transformers policy needs the 'ml' extra")
transformers = pytest.importorskip("transformers", reason="the transformers policy needs the 'ml' extra")

from harness_fakes import EventList, MemoryBlobs, NotesBackend, make_task  # noqa: E402

from bus_schemas.events.tasks import TaskSpecified  # noqa: E402
from harness_service.actions.format import ACTION_FORMAT_DOC  # noqa: E402
from harness_service.config import HarnessBudgets, HarnessConfig  # noqa: E402
from harness_service.context.messages import ASSISTANT_START  # noqa: E402
from harness_service.context.sections import render_tool  # noqa: E402
from harness_service.context.tokens import TokenizerCounter  # noqa: E402
from harness_service.memory.store import MemoryStore  # noqa: E402
from harness_service.policy.transformers_local import TransformersPolicy  # noqa: E402
from harness_service.runner.episode import Harness, RunIds, run_episode  # noqa: E402
from producers.backends.sandbox.backend import SandboxBackend  # noqa: E402
from producers.backends.sandbox.catalog import TOOLS  # noqa: E402
from producers.tasks.suite import build_task_suite  # noqa: E402

pytestmark = pytest.mark.unit

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def smallest_task_per_category() -> list[TaskSpecified]:
    best: dict[str, TaskSpecified] = {}
    for task in build_task_suite("run-tiny-model"):
        current = best.get(task.category)
        if task.split == "train" and (current is None or len(task.tools) < len(current.tools)):
            best[task.category] = task
    return list(best.values())


TASKS = smallest_task_per_category()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-layer random Qwen3 and a byte-level BPE trained on the action format and the tools' docs."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    corpus = [ACTION_FORMAT_DOC] + [render_tool(TOOLS[name].spec) for task in TASKS for name in task.tools]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tokenizer.train_from_iterator(
        corpus, trainers.BpeTrainer(vocab_size=1000, special_tokens=SPECIALS, initial_alphabet=alphabet)
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIALS[1:],
    )
    config = transformers.Qwen3Config(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny")
    transformers.Qwen3ForCausalLM(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def harness_for(checkpoint: Path, events: EventList, blobs: MemoryBlobs, max_steps: int) -> Harness:
    policy = TransformersPolicy.from_dir(checkpoint, max_new_tokens=12)
    counter = TokenizerCounter(transformers.AutoTokenizer.from_pretrained(checkpoint, local_files_only=True))
    config = HarnessConfig(budgets=HarnessBudgets(max_steps=max_steps, max_invalid_actions=5))
    return Harness(config=config, policy=policy, blobs=blobs, events=events, counter=counter)


def test_a_tiny_local_model_runs_an_episode_with_exact_token_accounting(checkpoint: Path) -> None:
    events, blobs = EventList(), MemoryBlobs()
    harness = harness_for(checkpoint, events, blobs, max_steps=3)
    outcome = run_episode(harness, make_task(), NotesBackend(), RunIds(run_id="r"))
    assert events.types()[0] == "EpisodeStarted" and events.types()[-1] == "EpisodeEnded"
    assert events[0].policy_version == f"local:{checkpoint.name}"  # type: ignore[attr-defined]
    assert outcome.steps == 3 and 0 < outcome.output_tokens <= 3 * 12
    built = [e for e in events if e.event_type == "ContextBuilt"]
    prefix = harness.counter.count(ASSISTANT_START)  # the prompt is the recorded context plus the assistant header
    assert outcome.input_tokens == sum(e.token_count + prefix for e in built)  # type: ignore[attr-defined]


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.category)
def test_a_tiny_local_model_runs_sandbox_episodes_of_every_category(checkpoint: Path, task: TaskSpecified) -> None:
    events, blobs = EventList(), MemoryBlobs()
    outcome = run_episode(
        harness_for(checkpoint, events, blobs, 2), task, SandboxBackend(), RunIds(run_id="r"), MemoryStore()
    )
    assert outcome.steps >= 1 and events.types()[-1] == "EpisodeEnded"
    assert all(
        e.error is None or e.error.code in {"parse_error", "unknown_tool", "invalid_argument"}  # type: ignore[attr-defined]
        for e in events
        if e.event_type == "ObservationReturned"
    )
