"""The run's last figure: the best model by dev, evaluated once on the test split (dev drives promotion; test
is never looked at by the loop, so its score is the unbiased one)."""

from __future__ import annotations

import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from bus_schemas.events import DevSetEvaluated, TaskSpecified
from infra.bootstrap import Ports
from infra.events import publish_all
from infra.loop.config import LoopConfig
from infra.loop.monitor import RoundProgress

if TYPE_CHECKING:
    from harness_service.config import HarnessConfig
    from harness_service.ports import BlobSink
    from learner.episodes import JudgedEpisode


def best_by_dev(rounds: list[RoundProgress]) -> DevSetEvaluated | None:
    """The model evaluation with the highest dev Overall (the later round on ties)."""
    evaluated = [r for r in rounds if r.dev is not None]
    if not evaluated:
        return None
    return max(evaluated, key=lambda r: (r.dev.overall, r.round)).dev  # type: ignore[union-attr]


def _judge(
    checkpoint: Path, name: str, harness: HarnessConfig, blobs: BlobSink | str, tasks: list[TaskSpecified], run_id: str
) -> list[JudgedEpisode]:
    """``tasks`` judged by the checkpoint under ``harness`` in this process (greedy, each on its own seed); the
    episodes' blobs go to ``blobs`` (a store, or its URL in another process)."""
    from infra.bootstrap import open_blob_store
    from learner.eval.dev import evaluate_dev
    from learner.jobs import skills
    from learner.model.factory import load_checkpoint
    from learner.model.policy import PlannerPolicy
    from learner.model.window import PromptWindow

    model, tokenizer = load_checkpoint(checkpoint)
    policy = PlannerPolicy(model, tokenizer, name=name, window=PromptWindow.load(checkpoint))
    model_name, _, model_version = name.partition("/")
    report = evaluate_dev(
        policy,
        tasks,
        config=harness,
        skills=skills(),
        blobs=open_blob_store(blobs) if isinstance(blobs, str) else blobs,
        publish=lambda events: None,
        run_id=run_id,
        model_name=model_name,
        model_version=model_version,
        round=None,
    )
    return report.episodes


def judge_in_processes(
    checkpoint: Path,
    name: str,
    harness: HarnessConfig,
    blobs: tuple[BlobSink, str],
    tasks: list[TaskSpecified],
    run_id: str,
    processes: int,
) -> list[JudgedEpisode]:
    """``_judge`` of every ``processes``-th task in each of ``processes`` processes (this one among them, writing
    to ``blobs[0]``; the others open the store at the URL ``blobs[1]``), in task order again: an episode decodes on
    one core, and its outcome does not depend on the others (its own seed, its own memory store, a reset backend)."""
    shares = [tasks[i::processes] for i in range(processes)]
    with ProcessPoolExecutor(processes - 1, mp_context=multiprocessing.get_context("spawn")) as pool:
        others = [pool.submit(_judge, checkpoint, name, harness, blobs[1], share, run_id) for share in shares[1:]]
        judged = [_judge(checkpoint, name, harness, blobs[0], shares[0], run_id), *(f.result() for f in others)]
    by_task = {e.verdict.task_id: e for share in judged for e in share}
    return [by_task[t.task_id] for t in tasks]


def evaluate_test(
    ports: Ports,
    config: LoopConfig,
    run_id: str,
    rounds: list[RoundProgress],
    out: Path | None = None,
    *,
    blobs_url: str | None = None,
) -> DevSetEvaluated | None:
    """Publish one ``DevSetEvaluated(split="test")`` on the last round; None when no model was evaluated on dev.

    The episodes run after the consumers stopped, so they stay off the bus (a replay of the verifier or curator
    would otherwise judge episodes the live run never judged): in this process, or, given the blob store's
    ``blobs_url``, in ``config.rollout_workers`` processes (this one among them). ``out`` gets one line per test
    task (category, outcome, steps, tokens). Greedy decoding and task seeds make them reproducible from the
    versions, however many processes ran them.
    """
    best = best_by_dev(rounds)
    if best is None:
        return None
    from harness_service.config import HarnessConfig
    from learner.dataset.harnesses import harness_resolver
    from learner.eval.dev import summarise
    from learner.jobs import download_version, harness_version, test_tasks

    learner = config.learner.model_copy(update={"model_name": best.model_name})
    known = {harness_version(learner): learner.harness, "default": HarnessConfig()}
    harness = harness_resolver(known, ports.registry)(best.harness_version) or learner.harness
    name = f"{best.model_name}/{best.model_version}"
    local = download_version(ports, learner, best.model_version)
    tasks = test_tasks(learner, run_id)
    if blobs_url is not None and config.rollout_workers > 1:
        episodes = judge_in_processes(
            local, name, harness, (ports.blobs, blobs_url), tasks, run_id, config.rollout_workers
        )
    else:
        episodes = _judge(local, name, harness, ports.blobs, tasks, run_id)
    last = max(r.round for r in rounds)
    evaluated = summarise(episodes, tasks, best.model_name, best.model_version, best.harness_version, run_id, last)
    test = evaluated.model_copy(update={"split": "test"})
    publish_all(ports.bus, [test])
    if out is not None:
        category = {t.task_id: t.category for t in tasks}
        rows = [
            {
                "task_id": e.verdict.task_id,
                "category": category[e.verdict.task_id],
                "outcome": e.verdict.outcome,
                "steps": e.outcome.steps,
                "end": e.outcome.reason,
                "tokens": e.outcome.input_tokens + e.outcome.output_tokens,
            }
            for e in episodes
        ]
        out.write_text(
            json.dumps(
                {
                    "model": f"{best.model_name}/{best.model_version}",
                    "harness": best.harness_version,
                    "overall": test.overall,
                    "episodes": rows,
                },
                indent=1,
            )
        )
    return test
