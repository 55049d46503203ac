"""``flywheel run --algorithm rl`` on the real stack: the trainer's GRPO publishes its groups on Kafka and waits for
the rollout-worker and verifier processes; every consumer is its own process. ``--algorithm mixed`` on the real
stack: test_loop_real_stack.py (its own file, so xdist runs the two long runs on different workers)."""

from __future__ import annotations

import pytest
from loop_support import check_run, real_stack_ports, run_spawned_on_real_stack
from rl_support import check_rl, small_rl_loop

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(1200)]


def test_rl_rounds_with_every_consumer_as_a_process_on_the_real_stack(real_stack, unique, tmp_path):  # noqa: ANN001
    run_id = f"e2e-rl-stack-{unique}"
    proc = run_spawned_on_real_stack(real_stack, run_id, small_rl_loop(tmp_path, "rl"), tmp_path)
    assert "GRPO steps" in proc.stdout
    ports = real_stack_ports(real_stack, run_id)
    try:
        check_run(ports, run_id, tmp_path / "runs" / run_id)
        check_rl(ports, run_id, tmp_path / "runs" / run_id, "rl")
    finally:
        ports.close()
