"""``flywheel run --algorithm mixed`` (continued SFT, then GRPO with CARE) on the real stack, every consumer its
own process; the machinery is test_loop_rl_real_stack.py's."""

from __future__ import annotations

import pytest
from test_loop_rl_real_stack import run_on_real_stack

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(1200)]


def test_mixed_rounds_with_every_consumer_as_a_process_on_the_real_stack(real_stack, unique, tmp_path):  # noqa: ANN001
    run_on_real_stack(real_stack, unique, tmp_path, "mixed")
