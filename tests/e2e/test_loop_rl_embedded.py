"""``flywheel run --algorithm rl`` on the embedded default: GRPO's groups go through the in-process rollout worker and
verifier (the same consumers), two rounds, replay verifies. ``--algorithm mixed`` on the embedded default:
test_loop_embedded.py (its own file, so xdist runs the two long runs on different workers)."""

from __future__ import annotations

import pytest
from loop_support import check_run
from rl_support import check_rl, small_rl_loop

from infra.bootstrap import open_ports
from infra.config import load_settings
from infra.loop.run import run_loop

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_rl_rounds_in_process_on_the_embedded_adapters(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_id = "e2e-rl-embedded"
    settings = load_settings(
        bus=f"sqlite:///{tmp_path}/bus.db",
        blobs=f"file:///{tmp_path}/blobs",
        registry=f"sqlite:///{tmp_path}/mlflow.db",
    )
    result = run_loop(settings, small_rl_loop(tmp_path, "rl"), run_id=run_id, show_progress=False)
    assert result.dead_letters == 0 and [r.round for r in result.rounds] == [0, 1]
    assert result.rounds[1].rl_steps == 2 and result.rounds[1].rl_episodes == 8
    ports = open_ports(settings.model_copy(update={"bus": result.bus_url}))
    try:
        check_run(ports, run_id, tmp_path / "runs" / run_id)
        check_rl(ports, run_id, tmp_path / "runs" / run_id, "rl")
    finally:
        ports.close()
