"""The main job end to end on the real stack: Kafka + SeaweedFS + MLflow, every consumer its own process."""

from __future__ import annotations

import re

import pytest
from loop_support import check_run, real_stack_ports, run_spawned_on_real_stack, small_loop

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(1200)]


def test_two_rounds_with_every_consumer_as_a_process_on_the_real_stack(real_stack, unique, tmp_path):
    run_id = f"e2e-stack-{unique}"
    proc = run_spawned_on_real_stack(real_stack, run_id, small_loop(tmp_path), tmp_path)
    logs = tmp_path / "runs" / run_id / "logs"
    assert "dev Overall per round:" in proc.stdout
    consumers = (
        "round_controller",
        "reweighter",
        "task_constructor",
        "verifier",
        "diagnoser",
        "curator",
        "trainer",
        "dev_evaluator",
        "harness_reviser",
        "rollout-worker",
    )
    # the run's own log (library output); each consumer: its console (<name>.log) and every record, libraries'
    # too, per process (<name>.all.log, or <name>-<k>.all.log for each of a consumer's worker processes)
    names = {p.name for p in logs.glob("*.log")}
    assert sorted(n for n in names if not n.endswith(".all.log")) == sorted(
        ["flywheel.log", *(f"{n}.log" for n in consumers)]
    )
    every_record = {n.removesuffix(".all.log") for n in names if n.endswith(".all.log")}
    assert {re.sub(r"-\d+$", "", n) for n in every_record} == set(consumers), sorted(every_record)
    ports = real_stack_ports(real_stack, run_id)
    try:
        check_run(ports, run_id, tmp_path / "runs" / run_id)
    finally:
        ports.close()
