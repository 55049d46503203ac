"""``flywheel run --algorithm rl`` on the embedded default: GRPO's groups go through the in-process rollout worker and
verifier (the same consumers), two rounds, replay verifies. ``--algorithm mixed`` on the embedded default:
test_loop_embedded.py (its own file, so xdist runs the two long runs on different workers)."""

from __future__ import annotations

import pytest
from rl_support import run_in_process, small_rl_loop

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_rl_rounds_in_process_on_the_embedded_adapters(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_in_process(tmp_path, small_rl_loop(tmp_path, "rl"), "e2e-rl-embedded")
