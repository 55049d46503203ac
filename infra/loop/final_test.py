"""The run's last figure: the best model by dev, evaluated once on the test split (dev drives promotion; test
is never looked at by the loop, so its score is the unbiased one)."""

from __future__ import annotations

import json
from pathlib import Path

from bus_schemas.events import DevSetEvaluated
from infra.bootstrap import Ports
from infra.events import publish_all
from infra.loop.config import LoopConfig
from infra.loop.monitor import RoundProgress


def best_by_dev(rounds: list[RoundProgress]) -> DevSetEvaluated | None:
    """The model evaluation with the highest dev Overall (the later round on ties)."""
    evaluated = [r for r in rounds if r.dev is not None]
    if not evaluated:
        return None
    return max(evaluated, key=lambda r: (r.dev.overall, r.round)).dev  # type: ignore[union-attr]


def evaluate_test(
    ports: Ports, config: LoopConfig, run_id: str, rounds: list[RoundProgress], out: Path | None = None
) -> DevSetEvaluated | None:
    """Publish one ``DevSetEvaluated(split="test")`` on the last round; None when no model was evaluated on dev.

    The episodes run in this process after the consumers stopped, so they stay off the bus (a replay of the
    verifier or curator would otherwise judge episodes the live run never judged); ``out`` gets one line per
    test task (category, outcome, steps, tokens). Greedy decoding and task seeds make them reproducible from the
    versions.
    """
    best = best_by_dev(rounds)
    if best is None:
        return None
    from harness_service.config import HarnessConfig
    from learner.dataset.harnesses import harness_resolver
    from learner.eval.dev import evaluate_dev
    from learner.jobs import harness_version, load_version, skills, test_tasks
    from learner.model.policy import PlannerPolicy
    from learner.model.window import PromptWindow

    learner = config.learner.model_copy(update={"model_name": best.model_name})
    known = {harness_version(learner): learner.harness, "default": HarnessConfig()}
    harness = harness_resolver(known, ports.registry)(best.harness_version) or learner.harness
    model, tokenizer, local = load_version(ports, learner, best.model_version)
    policy = PlannerPolicy(
        model, tokenizer, name=f"{best.model_name}/{best.model_version}", window=PromptWindow.load(local)
    )
    tasks = test_tasks(learner, run_id)
    report = evaluate_dev(
        policy,
        tasks,
        config=harness,
        skills=skills(),
        blobs=ports.blobs,
        publish=lambda events: None,
        run_id=run_id,
        model_name=best.model_name,
        model_version=best.model_version,
        round=None,
    )
    last = max(r.round for r in rounds)
    test = DevSetEvaluated.model_validate(
        {**report.evaluated.model_dump(), "split": "test", "round": last, "harness_version": best.harness_version}
    )
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
            for e in report.episodes
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
