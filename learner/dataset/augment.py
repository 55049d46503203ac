"""Value-swap augmentation: copies of an example with the values the model must copy replaced by fresh ones.

The tiny model memorises the few names, cities and times of the train pools instead of copying them from
the goal or an observation, so it fails on dev tasks whose values it never saw. Each copy replaces every
value the completion copies from the prompt (tool-call argument strings and numbers, the words of a
finish answer) with a random string of the same shape (letters for letters, digits for digits, the rest
kept), consistently in prompt and completion. Only copying then predicts the completion. Copies are
extra training rows; the recorded examples stay byte-identical to the log.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import orjson

from bus_schemas.json_types import json_leaves
from learner.dataset.build import Example

ACTION = re.compile(r"<action>(.*?)</action>", re.S)
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+\-:.' ]*[A-Za-z0-9]|[A-Za-z0-9]")


def _leaves(value: object) -> Iterator[str]:
    """The strings and integers among a JSON value's scalars, as text."""
    return (str(v) for v in json_leaves(value) if isinstance(v, (str, int)) and not isinstance(v, bool))


def copied_values(example: Example) -> list[str]:
    """Values of the completion's action that also occur in the prompt (longest first)."""
    found = ACTION.search(example.completion)
    if found is None:
        return []
    try:
        action = orjson.loads(found.group(1))
    except orjson.JSONDecodeError:
        return []
    if not isinstance(action, dict):
        return []
    candidates = set(_leaves(action.get("args", {})))
    if isinstance(action.get("answer"), str):
        candidates |= set(WORD.findall(action["answer"])) | set(re.findall(r"[A-Za-z0-9]+", action["answer"]))
    values = {v for v in candidates if len(v) >= 2 and _pattern(v).search(example.prompt)}
    return sorted(values, key=lambda v: (-len(v), v))


def _pattern(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])")


def _fresh(value: str, rng: random.Random) -> str:
    """A random value of the same shape: case-preserving letters, digits, everything else kept."""
    out = []
    for ch in value:
        if ch.isdigit():
            out.append(rng.choice(string.digits))
        elif ch.isupper():
            out.append(rng.choice(string.ascii_uppercase))
        elif ch.islower():
            out.append(rng.choice(string.ascii_lowercase))
        else:
            out.append(ch)
    return "".join(out)


def swap_values(example: Example, rng: random.Random) -> Example | None:
    """One augmented copy, or None when the completion copies nothing from the prompt."""
    values = copied_values(example)
    if not values:
        return None
    prompt, completion = example.prompt, example.completion
    for value in values:
        fresh = _fresh(value, rng)
        pattern = _pattern(value)
        prompt = pattern.sub(_literally(fresh), prompt)
        completion = pattern.sub(_literally(fresh), completion)
    return replace(example, prompt=prompt, completion=completion, episode_id=f"{example.episode_id}~swap")


def augment(examples: Sequence[Example], copies: int, seed: int = 0) -> list[Example]:
    """``copies`` value-swapped copies of every example that copies a value (deterministic for a seed)."""
    rng = random.Random(seed)
    out: list[Example] = []
    for example in examples:
        for _ in range(copies):
            swapped = swap_values(example, rng)
            if swapped is not None:
                out.append(swapped)
    return out


def _literally(text: str) -> Callable[[re.Match[str]], str]:
    """A ``re.sub`` replacement that inserts ``text`` as it is (a string replacement would expand backslashes)."""
    return lambda _match: text
