"""The dev and test slices score every template of every category, the same tasks each time, never a train task."""

from __future__ import annotations

from collections import Counter

import pytest

from learner import jobs
from learner.config import LearnerConfig
from learner.eval.dev import pick_tasks
from producers.tasks import build_task_suite
from producers.tasks.templates import TEMPLATES

pytestmark = pytest.mark.unit


def test_the_default_slices_cover_every_template_and_difficulty_of_each_category() -> None:
    config = LearnerConfig()
    for split, tasks in (("dev", jobs.dev_tasks(config, "run-s")), ("test", jobs.test_tasks(config, "run-s"))):
        assert {t.split for t in tasks} == {split}
        per_category = Counter(t.category for t in tasks)
        assert set(per_category.values()) == {config.dev_per_category}
        assert {t.source.template_id for t in tasks} == set(TEMPLATES)  # 32 templates, 16 tasks per category
        assert {(t.category, t.difficulty) for t in tasks} == {(t.category, t.difficulty) for t in TEMPLATES.values()}
        for category in per_category:  # spread evenly: a category's templates are scored as often, give or take one
            counts = Counter(t.source.template_id for t in tasks if t.category == category).values()
            assert max(counts) - min(counts) <= 1


def test_a_slice_takes_each_templates_first_instance_before_any_second_one() -> None:
    suite = build_task_suite("run-s")
    memory = [t for t in TEMPLATES.values() if t.category == "memory"]
    picked = pick_tasks(suite, per_category=len(memory) + 1, categories=("memory",))
    firsts = [t for t in suite if t.split == "dev" and t.category == "memory"]
    assert [t.source.template_id for t in picked[: len(memory)]] == [t.id for t in memory]
    assert picked[0] == firsts[0] and picked[len(memory)] == firsts[1]  # the first template's second instance
    assert pick_tasks(suite, per_category=3, categories=("memory",)) == picked[:3]
    assert len(pick_tasks(suite, categories=("memory",))) == len(firsts)  # None: the whole split


def test_the_slices_are_disjoint_from_the_train_pool_and_from_each_other() -> None:
    config = LearnerConfig()
    dev, test = jobs.dev_tasks(config, "run-s"), jobs.test_tasks(config, "run-s")
    train = {t.task_id for t in jobs.train_tasks(config, "run-s")}
    assert not {t.task_id for t in dev} & train and not {t.task_id for t in test} & train
    assert not {t.task_id for t in dev} & {t.task_id for t in test}
    assert [t.task_id for t in jobs.dev_tasks(config, "run-s")] == [t.task_id for t in dev]
