"""SFT from random init lifts held-out dev success (GRPO through the bus: test_learner_rl_bus.py).

One module-scoped run on CPU: reference episodes of two tool-use templates (train split of 24 suite seeds)
-> dataset -> tokenizer + tiny Qwen3 model -> trl SFT. Held-out tasks are instances of a suite seed never
trained on (new worlds, labels x times combinations). The official dev split draws times from hours that
never occur in train (11/14/17/20 vs 10/13/16/19/22); this budget does not generalise to those.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics
from learner.config import LearnerConfig
from learner.dataset.coldstart import seed_cold_start
from learner.eval import evaluate_dev
from learner.jobs import current_dataset, skills
from learner.model import PlannerPolicy, PromptWindow, build_tiny_model, train_tokenizer
from learner.model.window import turn_corpus
from learner.sft import SftSettings, train_sft
from learner.tasks import template_tasks

pytestmark = pytest.mark.unit
TEMPLATES = {"tu.set_alarm", "tu.reminder_due"}
WINDOW = PromptWindow(max_prompt_tokens=128, max_new_tokens=64, goal_tokens=48)
SFT = SftSettings(max_steps=300, batch_size=16, learning_rate=3e-3, logging_steps=100)


def tasks(split: str, seeds: range) -> list:
    return template_tasks("run-learner-test", seeds, split, lambda t: t.id in TEMPLATES)


@dataclass
class Trained:
    ports: Ports
    config: LearnerConfig
    model: Any
    tokenizer: Any
    before: float
    after: float
    dev: int


def dev_success(model: Any, tokenizer: Any, ports: Ports, config: LearnerConfig, dev: list) -> float:
    policy = PlannerPolicy(model, tokenizer, name="planner/0", window=WINDOW)
    report = evaluate_dev(
        policy,
        dev,
        config=config.harness,
        skills=skills(),
        blobs=ports.blobs,
        publish=lambda events: None,
        run_id="run-learner-test",
        model_name="planner",
        model_version="0",
    )
    return report.success_rate


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    root: Path = tmp_path_factory.mktemp("learner")
    ports = Ports(
        open_bus(f"sqlite:///{root}/bus.db?session_timeout_s=1.5"),
        open_blob_store(f"file:///{root}/blobs"),
        open_registry(f"sqlite:///{root}/mlflow.db"),
    )
    ensure_topics(ports.bus)
    config = LearnerConfig()
    seed_cold_start(ports, tasks("train", range(2, 26)), config.harness, skills(), run_id="run-learner-test")
    data = current_dataset(ports, config)
    tokenizer = train_tokenizer(turn_corpus(e.prompt + e.completion for e in data.examples), config.vocab_size)
    model = build_tiny_model(tokenizer, config.tiny)
    dev = tasks("train", range(40, 41))[::2]
    before = dev_success(model, tokenizer, ports, config, dev)
    train_sft(model, tokenizer, data.examples, root / "sft", settings=SFT, window=WINDOW)
    after = dev_success(model, tokenizer, ports, config, dev)
    return Trained(ports, config, model, tokenizer, before, after, len(dev))


def test_sft_from_random_init_lifts_held_out_dev_success(trained: Trained) -> None:
    # a random-init model cannot even emit a parseable action; chance success is 0 on every task
    assert trained.before == 0.0
    assert trained.after >= 0.5, f"dev success after SFT {trained.after:.2f} over {trained.dev} tasks"
