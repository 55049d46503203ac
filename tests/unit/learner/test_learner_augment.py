"""Value-swap augmentation replaces copied values consistently and leaves everything else alone."""

from __future__ import annotations

import random

import pytest

from learner.dataset.augment import augment, copied_values, swap_values
from learner.dataset.build import Example

pytestmark = pytest.mark.unit

PROMPT = (
    "<|im_start|>user\n# Task\nSet an alarm for 19:50 labelled 'Pick up kids'.\n<|im_end|>\n"
    '<|im_start|>user\nObservation: {"id":"c_4","name":"Dev Moreau"}<|im_end|>\n'
)
COMPLETION = (
    '<action>{"args":{"label":"Pick up kids","time":"19:50","id":"c_4","n":3},'
    '"kind":"tool_call","name":"clock.set_alarm"}</action>'
)


def _example(prompt=PROMPT, completion=COMPLETION):
    return Example("ep-1", "t-1", 1, "tool_use", prompt, completion, 1.0)


def test_only_values_the_completion_copies_from_the_prompt_are_swapped():
    assert copied_values(_example()) == ["Pick up kids", "19:50", "c_4"]  # 3 is not in the prompt; names are not copied
    swapped = swap_values(_example(), random.Random(0))
    assert swapped is not None and swapped.episode_id == "ep-1~swap"
    for value in ("Pick up kids", "19:50", "c_4"):
        assert value not in swapped.prompt and value not in swapped.completion
    assert "Dev Moreau" in swapped.prompt and '"name":"clock.set_alarm"' in swapped.completion
    label = swapped.completion.split('"label":"')[1].split('"')[0]
    assert f"labelled '{label}'" in swapped.prompt and len(label) == len("Pick up kids") and label[4] == " "


def test_answers_are_swapped_word_by_word_and_nothing_copied_means_no_copy():
    finish = _example(
        'Observation: {"high_c":17,"city":"Lisbon"}', '<action>{"answer":"17 °C in Lisbon","kind":"finish"}</action>'
    )
    swapped = swap_values(finish, random.Random(1))
    assert swapped is not None and "Lisbon" not in swapped.completion and "°C" in swapped.completion
    assert swap_values(_example("nothing here", COMPLETION), random.Random(0)) is None
    assert swap_values(_example(completion="no action at all"), random.Random(0)) is None


def test_augment_is_deterministic_per_seed():
    rows = [_example()] * 3
    assert augment(rows, 2, seed=5) == augment(rows, 2, seed=5) and len(augment(rows, 2, seed=5)) == 6
    assert augment(rows, 2, seed=5) != augment(rows, 2, seed=6) and augment(rows, 0) == []
