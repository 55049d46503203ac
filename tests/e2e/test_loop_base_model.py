"""``flywheel run --base-model PATH --lora``: a user's checkpoint (its own chat template) runs the main job end to end
on the embedded default, trained with LoRA, evaluated on dev and test, and every version is a plain checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner
from user_checkpoint import users_checkpoint

from bus_schemas.events.training import overall_score
from infra.cli.main import app
from learner.config import CATEGORIES
from learner.model.window import PromptWindow

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_flywheel_run_trains_a_users_checkpoint_with_lora(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the job's .flywheel/ and runs/ go here
    checkpoint = users_checkpoint(tmp_path / "user-model")
    # plumbing, not learning: two examples per step (this checkpoint's 400-token vocabulary fills the 4,096-token
    # window, and 16 such rows took ~13 s per step on one thread)
    config = tmp_path / "loop.json"
    config.write_text(json.dumps({"learner": {"sft": {"batch_size": 2}}}))
    args = [
        "run",
        f"--config={config}",
        f"--base-model={checkpoint}",
        "--lora",
        "--lora-rank=2",
        "--rounds=1",
        "--first-rollouts=16",  # the default min_admitted_for_training
        "--sft-steps=2",
        "--dev-per-category=1",
        "--no-revise",
        "--no-progress",
        "--run-id=base-lora",
    ]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "runs" / "base-lora" / "report.json").read_text())
    (round0,) = report["rounds"]
    assert round0["dev_model_version"] == "planner/1" and round0["test_overall"] is not None
    test = json.loads((tmp_path / "runs" / "base-lora" / "test_episodes.json").read_text())
    by_category: dict[str, list[bool]] = {}
    for row in test["episodes"]:  # one row per test task, with its category: the figure can be recomputed
        by_category.setdefault(row["category"], []).append(row["outcome"] == "success")
    assert set(by_category) == set(CATEGORIES)
    rates = {c: sum(solved) / len(solved) for c, solved in by_category.items()}
    assert overall_score(rates) == pytest.approx(round0["test_overall"])
    assert test["overall"] == pytest.approx(round0["test_overall"])
    trained = next((tmp_path / ".flywheel" / "learner").glob("sft-base-lora-r0"))
    window = PromptWindow.load(trained)
    assert window.chat_template and window.max_prompt_tokens == 4096
    weights, base = load_file(str(trained / "model.safetensors")), load_file(str(checkpoint / "model.safetensors"))
    assert set(weights) == set(base)  # saved merged: a plain checkpoint, no adapter weights
    assert torch.equal(weights["model.embed_tokens.weight"], base["model.embed_tokens.weight"])  # frozen: LoRA
    assert any(not torch.equal(weights[k], base[k]) for k in base if k.endswith("q_proj.weight"))
