"""Harness config: content digest and JSON round trip (the artifact the registry versions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from bus_schemas.events.tasks import Budgets
from harness_service.config import HarnessBudgets, HarnessConfig
from harness_service.runner.budgets import effective_budgets

pytestmark = pytest.mark.unit


def test_digest_names_the_content(tmp_path: Path) -> None:
    config = HarnessConfig(instructions="Be brief.", budgets=HarnessBudgets(max_steps=12))
    path = tmp_path / "harness.json"
    path.write_text(config.model_dump_json())
    loaded = HarnessConfig.load(path)
    assert loaded == config and loaded.digest() == config.digest()
    assert HarnessConfig(instructions="Be verbose.").digest() != config.digest()
    assert config.digest().startswith("sha256:") and len(config.digest()) == 71
    native = config.model_copy(update={"action_syntax": "tool_call"})
    assert native.digest() != config.digest()
    # versions made before ``action_syntax`` existed keep their digest: the default is left out of it
    before = config.model_dump(exclude={"compact", "action_syntax"})
    assert HarnessConfig.model_validate(before).digest() == config.digest()
    assert json.loads(HarnessConfig.model_validate(before).model_dump_json())["action_syntax"] == "action"


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError):
        HarnessConfig.model_validate({"instructions": "x", "temprature": 0.2})


def test_effective_budgets_take_the_stricter_limit() -> None:
    harness = HarnessBudgets(max_steps=20, max_total_tokens=1000)
    assert effective_budgets(harness, None) == Budgets(max_steps=20, max_tokens=1000)
    task = Budgets(max_steps=8, max_tokens=5000, max_tool_calls=4, max_wall_s=9.0)
    assert effective_budgets(harness, task, max_steps=5) == Budgets(
        max_steps=5, max_tokens=1000, max_tool_calls=4, max_wall_s=9.0
    )
