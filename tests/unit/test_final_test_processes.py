"""The run's test split judged in several processes gives the episodes one process gives, in task order."""

from __future__ import annotations

import pytest

from infra.bootstrap import open_blob_store
from infra.loop.final_test import _judge, judge_in_processes
from learner.config import LearnerConfig
from learner import jobs
from learner.model.factory import build_tiny_model, save_checkpoint
from learner.model.tokenizer import train_tokenizer
from learner.model.value_slots import SLOT_TOKENS

pytestmark = pytest.mark.unit


def test_judging_in_two_processes_gives_the_episodes_of_one(tmp_path):
    config = LearnerConfig(max_new_tokens=12, dev_per_category=1)  # a random model writes to the limit: keep it short
    corpus = ['<action>{"kind": "finish"}</action> hello world'] * 20
    tokenizer = train_tokenizer(corpus, vocab_size=300, extra_special=SLOT_TOKENS)  # the window writes value slots
    checkpoint = save_checkpoint(build_tiny_model(tokenizer, config.tiny), tokenizer, tmp_path / "ck")
    jobs.window(config).save(checkpoint)
    tasks = jobs.test_tasks(config, "run-t")
    assert len({t.category for t in tasks}) == len(tasks) == 4
    url = f"file:///{tmp_path}/blobs"
    one = _judge(checkpoint, "planner/1", config.harness, open_blob_store(url), tasks, "run-t")
    two = judge_in_processes(checkpoint, "planner/1", config.harness, (open_blob_store(url), url), tasks, "run-t", 2)
    assert [e.verdict.task_id for e in two] == [t.task_id for t in tasks]

    def seen(episodes):  # noqa: ANN001, ANN202
        return [(e.verdict.outcome, e.outcome.steps, e.outcome.reason, e.outcome.output_tokens) for e in episodes]

    assert seen(two) == seen(one) and sum(e.outcome.output_tokens for e in one) > 0
