"""Name -> consumer, for ``flywheel consume NAME``: each builder returns a fresh ConsumerSpec for one process."""

from __future__ import annotations

from collections.abc import Callable

from consumers.curator.spec import build as curator
from consumers.dev_evaluator.spec import build as dev_evaluator
from consumers.diagnoser.spec import build as diagnoser
from consumers.harness_reviser.spec import build as harness_reviser
from consumers.reweighter.spec import build as reweighter
from consumers.round_controller.spec import build as round_controller
from consumers.task_constructor.spec import build as task_constructor
from consumers.trainer.spec import build as trainer
from consumers.verifier.spec import build as verifier
from infra.runtime import ConsumerSpec

CONSUMERS: dict[str, Callable[[], ConsumerSpec]] = {
    "verifier": verifier,
    "curator": curator,
    "diagnoser": diagnoser,
    "reweighter": reweighter,
    "task_constructor": task_constructor,
    "round_controller": round_controller,
    "harness_reviser": harness_reviser,
    "dev_evaluator": dev_evaluator,
    "trainer": trainer,
}


def build(name: str) -> ConsumerSpec:
    if name not in CONSUMERS:
        raise KeyError(f"no consumer named {name!r}; known: {', '.join(CONSUMERS)}")
    return CONSUMERS[name]()
