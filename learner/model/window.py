"""The token window a planner sees: the task turn plus the newest turns, or just the newest tokens; ChatML or the
tokenizer's own chat template."""

from __future__ import annotations

import contextlib
import functools
import json
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness_service.context.messages import ASSISTANT_START, SYSTEM_START, USER_START, parse_messages, split_turns
from learner.model.value_slots import SLOT_TOKENS, SlotTable

END = "<|im_end|>"
WINDOW_FILE = "prompt_window.json"


def turn_corpus(texts: Iterable[str]) -> Iterator[str]:
    """Each distinct turn once: a tokenizer corpus that counts the 4k-token system text once, not per example.

    Tried 2026-12-04: the corpus as a goal-keeping window shows it (each example's system turn, task turn and newest
    two turns, so the text the model reads most gets the merges). The compact system turn's p50 fell from 158 to 115
    tokens and no step lost a tool from the 160-token head (30% did), yet a round-0 cold start scored dev 0.131 ->
    0.081, test 0.056 -> 0.069 (seed 0). Not adopted."""
    seen: set[str] = set()
    for text in texts:
        for turn in split_turns(text):
            if turn not in seen:
                seen.add(turn)
                yield turn


@dataclass(frozen=True)
class PromptWindow:
    """What a tiny model is shown of a prompt; training examples and rollouts use the same window.

    ``goal_tokens`` > 0: the system turn keeps its first ``system_tokens`` tokens (0 drops it: the model
    then never sees what the harness builds), the first user turn (the task, its slot values, memory hits)
    keeps its first ``goal_tokens`` tokens, and the rest of ``max_prompt_tokens`` holds the newest turns
    (feedback included), left-truncated. ``goal_tokens`` = 0: the newest ``max_prompt_tokens`` tokens only
    (which loses the task after the first step). A compact harness profile (``HarnessConfig.compact``)
    renders a system turn that fits ``system_tokens``.
    """

    max_prompt_tokens: int = 128
    max_new_tokens: int = 64
    goal_tokens: int = 0
    system_tokens: int = 0
    copy_bias: float = 0.0
    """Decoding: the logit bonus of tokens that continue a passage of the prompt inside a tool call's string
    argument (``learner.model.copy_bias``); 0 turns it off. Saved with the window, so every loader decodes alike."""
    constrained_actions: bool = False
    """Decoding holds the action to the step's tools and the action schema (``learner.model.constrained``): the
    model chooses among the tokens that keep it valid, greedy or sampled."""
    chat_template: bool = False
    """Render the harness's messages with the tokenizer's own chat template (a checkpoint a user brings with
    ``--base-model``: Qwen, Llama, ...) instead of the tiny model's ChatML text; a turn ends with the template's
    end-of-turn token. Too long a prompt drops whole turns after the task turn, oldest first (the system turn and
    the task always stay), then keeps the newest ``max_prompt_tokens``; ``goal_tokens``/``system_tokens`` apply to
    ChatML only. Training and decoding both go through ``prompt_ids``/``completion_ids``, so they stay identical."""
    value_slots: bool = False
    """Candidate values in the prompt's user turns are followed by slot tokens, and an output's values that are
    candidates are written as their slot (``learner.model.value_slots``); decoding writes the values back. ChatML
    only; the tokenizer needs the slot tokens (``SLOT_TOKENS``)."""
    word_slots: bool = False
    """With ``value_slots``: the content words of the task ("kettle", "babysitter") are candidates too, named by
    word slots (``SlotTable.of``'s ``task_words``), so an argument taken from the task's wording is one choice."""
    native_tools: bool = False
    """With ``chat_template``: the step's tools also go to the template's ``tools`` (OpenAI function schemas, as
    ``actions.native.function_tools`` gives them), rendered in the checkpoint's own tool format - what an
    OpenAI-compatible server (``transformers serve``, vLLM) renders from a request's ``tools`` field, so a
    checkpoint trained here sees the same prompt when it is served."""

    def __post_init__(self) -> None:
        if not 0 <= self.goal_tokens < self.max_prompt_tokens:
            raise ValueError(f"goal_tokens must be in [0, max_prompt_tokens), got {self.goal_tokens}")
        if self.system_tokens < 0 or (
            self.system_tokens
            and (not self.goal_tokens or self.system_tokens + self.goal_tokens >= self.max_prompt_tokens)
        ):
            raise ValueError("system_tokens needs goal_tokens > 0 and system_tokens + goal_tokens < max_prompt_tokens")
        if self.copy_bias < 0:
            raise ValueError(f"copy_bias must be >= 0, got {self.copy_bias}")
        if self.chat_template and (self.goal_tokens or self.system_tokens):
            raise ValueError("goal_tokens/system_tokens cut ChatML turns: set both to 0 with chat_template")
        if self.native_tools and not self.chat_template:
            raise ValueError("native_tools renders tools with the tokenizer's chat template: set chat_template")
        if self.value_slots and self.chat_template:
            raise ValueError("value_slots marks the tiny model's ChatML: a chat template renders its own")
        if self.word_slots and not self.value_slots:
            raise ValueError("word_slots are value slots of the task's words: set value_slots")

    def save(self, checkpoint: Path) -> None:
        """Stored beside the weights, so any loader serves the model with the window it was trained with."""
        (checkpoint / WINDOW_FILE).write_text(json.dumps(asdict(self)))

    @classmethod
    def load(cls, checkpoint: Path) -> PromptWindow:
        path = checkpoint / WINDOW_FILE
        return cls(**json.loads(path.read_text())) if path.is_file() else cls()

    def prompt_ids(self, tokenizer: Any, messages_text: str, tools: Sequence[Mapping[str, Any]] = ()) -> list[int]:
        """The prompt's token ids; ``tools`` (the step's function schemas) are rendered only with ``native_tools``."""
        if self.chat_template:
            functions = list(tools) if self.native_tools else []
            return _templated_prompt(tokenizer, messages_text, self.max_prompt_tokens, functions)
        if self.value_slots:
            if not slot_ids(tokenizer):
                raise ValueError("value_slots needs a tokenizer with the slot tokens (train_tokenizer's extra_special)")
            messages_text = _slot_table(messages_text, self.word_slots).mark(messages_text)
        if self.goal_tokens == 0:
            ids = _encode(tokenizer, messages_text + ASSISTANT_START)
            return ids[-self.max_prompt_tokens :]
        turns = split_turns(messages_text)
        first = next((i for i, turn in enumerate(turns) if turn.startswith(USER_START)), None)
        if first is None:
            return _newest(tokenizer, [*turns, ASSISTANT_START], self.max_prompt_tokens)
        head = _encode(tokenizer, turns[first])[: self.goal_tokens]
        if self.system_tokens:
            system = "".join(turn for turn in turns[:first] if turn.startswith(SYSTEM_START))
            head = (_encode(tokenizer, system)[: self.system_tokens] if system else []) + head
        return head + _newest(tokenizer, [*turns[first + 1 :], ASSISTANT_START], self.max_prompt_tokens - len(head))

    def written(self, messages_text: str, completion: str) -> str:
        """``completion`` (an action the harness rendered after ``messages_text``) as the model writes it: with
        ``value_slots``, its values that are candidates of the prompt as slot tokens; otherwise unchanged."""
        return _slot_table(messages_text, self.word_slots).delexicalise(completion) if self.value_slots else completion

    def output_text(self, tokenizer: Any, messages_text: str, ids: Sequence[int]) -> str:
        """The text of the model's output ``ids`` (the end-of-turn token left out) for the harness: special tokens
        dropped, and with ``value_slots`` each slot token replaced by the value it names in ``messages_text``."""
        if not self.value_slots:
            return str(tokenizer.decode(list(ids), skip_special_tokens=True))
        slots = slot_ids(tokenizer)
        pieces: list[str] = []
        start = 0
        for index, token in enumerate(ids):
            if token in slots:
                pieces += [tokenizer.decode(list(ids[start:index]), skip_special_tokens=True), slots[token]]
                start = index + 1
        pieces.append(tokenizer.decode(list(ids[start:]), skip_special_tokens=True))
        return _slot_table(messages_text, self.word_slots).expand("".join(pieces))

    def slot_values(self, tokenizer: Any, messages_text: str) -> dict[int, str | None]:
        """Each slot token's id -> the text ``output_text`` writes for it in this conversation (None: the slot names
        no value here, and writes nothing); empty without ``value_slots``."""
        if not self.value_slots:
            return {}
        table = _slot_table(messages_text, self.word_slots)
        return {token_id: table.slots.get(token) for token_id, token in slot_ids(tokenizer).items()}

    def completion_ids(self, tokenizer: Any, completion: str) -> list[int]:
        """The ids of an output as the model writes it (``written``), with the end of the turn."""
        if self.chat_template:
            return [*_encode(tokenizer, completion), self.end_id(tokenizer)]
        return _encode(tokenizer, completion + END)

    def end_id(self, tokenizer: Any) -> int:
        """The token that ends a model turn: decoding stops on it and every completion is trained to end with it."""
        return end_of_turn(tokenizer) if self.chat_template else int(tokenizer.convert_tokens_to_ids(END))


@functools.lru_cache(maxsize=8)
def _slot_table(conversation: str, task_words: bool) -> SlotTable:
    """``SlotTable.of``, built once per conversation: one reply's prompt, constraint and output text ask for the
    table of the same conversation, and so do a training example's prompt and completion (a table is never
    changed after it is built)."""
    return SlotTable.of(conversation, task_words)


def slot_ids(tokenizer: Any) -> dict[int, str]:
    """Token id -> text of the value slot tokens the tokenizer has."""
    ids = tokenizer.convert_tokens_to_ids(list(SLOT_TOKENS))
    unknown = tokenizer.unk_token_id
    return {int(i): token for i, token in zip(ids, SLOT_TOKENS, strict=True) if i is not None and i != unknown}


def end_of_turn(tokenizer: Any) -> int:
    """The end-of-turn token of a tokenizer's chat template (``<|im_end|>`` for Qwen, ``<|eot_id|>`` for Llama 3):
    the first token the template writes after an assistant message's content; the tokenizer's EOS if it writes none.
    Found once per tokenizer object (every completion and every decode asks for it)."""
    try:
        return _END_OF_TURN[tokenizer]
    except (KeyError, TypeError):
        pass
    marker = "\x00planner-flywheel\x00"
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": "?"}, {"role": "assistant", "content": marker}], tokenize=False
    )
    after = rendered[rendered.rindex(marker) + len(marker) :].strip()
    ids = _encode(tokenizer, after) if after else []
    if ids:
        found = ids[0]
    elif tokenizer.eos_token_id is None:
        raise ValueError("the chat template ends an assistant turn with nothing and the tokenizer has no EOS token")
    else:
        found = int(tokenizer.eos_token_id)
    with contextlib.suppress(TypeError):  # an object that takes no weak reference is asked again next time
        _END_OF_TURN[tokenizer] = found
    return found


_END_OF_TURN: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _templated_prompt(
    tokenizer: Any, messages_text: str, budget: int, tools: list[Mapping[str, Any]] | None = None
) -> list[int]:
    """The tokenizer's chat template over the messages, with the generation prompt; turns after the task turn are
    dropped oldest first, an action with its feedback at a time (so roles still alternate), while it is over
    ``budget`` tokens and older turns than the newest action and feedback remain; then the newest ``budget`` tokens
    are kept. The number of pairs to drop is found by bisection: a few renders, not one per dropped pair."""
    messages = [m.model_dump() for m in parse_messages(messages_text)]
    first = next((i for i, m in enumerate(messages) if m["role"] == "user"), len(messages))

    def render(dropped: int) -> list[int]:
        kept = messages[: first + 1] + messages[first + 1 + 2 * dropped :]
        text = tokenizer.apply_chat_template(kept, tools=tools or None, tokenize=False, add_generation_prompt=True)
        return _encode(tokenizer, text)

    ids = render(0)
    most = max(0, (len(messages) - (first + 1) - 2) // 2)  # keep the newest action with its feedback
    if len(ids) <= budget or most == 0:
        return ids[-budget:]
    low, high, fits = 1, most, None  # the fewest dropped pairs that fit, or ``most`` when none does
    while low <= high:
        middle = (low + high) // 2
        rendered = render(middle)
        if len(rendered) <= budget:
            fits, high = rendered, middle - 1
        else:
            low = middle + 1
    return (fits if fits is not None else render(most))[-budget:]


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))


def _newest(tokenizer: Any, turns: list[str], budget: int) -> list[int]:
    """The last ``budget`` tokens of ``turns``, encoding only as many turns (newest first) as it takes."""
    ids: list[int] = []
    for turn in reversed(turns):
        if len(ids) >= budget:
            break
        ids = _encode(tokenizer, turn) + ids
    return ids[-budget:] if budget > 0 else []
