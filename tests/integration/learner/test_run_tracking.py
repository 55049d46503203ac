"""What an experiment tracker sees of a flywheel run, on the real MLflow server and on MLflow's SQLite file: one
parent run (tags without secrets, config), each round's training run nested under it with its loss curve and its
training set as a dataset input, dev-evaluation runs nested too, per-round metrics at step=round, the report."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from bus_schemas.envelope import Producer
from bus_schemas.events.harness import HarnessRevisionDecided
from bus_schemas.events.training import CategoryScore, DevSetEvaluated, overall_score
from harness_service.config import HarnessBudgets, HarnessConfig
from harness_service.versions import publish_harness_version
from infra.bootstrap import open_blob_store, open_registry
from infra.loop.config import LoopConfig
from infra.loop.tracking import ParentRun, finish_parent_run, git_commit, start_parent_run
from infra.report.model import RoundRow, RunReport
from learner.config import LearnerConfig
from learner.dataset.build import DatasetBuild, Example
from learner.jobs import export_examples
from learner.model import TinyModelConfig, build_tiny_model, save_checkpoint, train_tokenizer
from learner.registry import Lineage, register_checkpoint
from learner.tracking import harness_revision_run, log_dev_evaluation, log_revision_decision

pytestmark = pytest.mark.integration

LOSS = ((10, {"loss": 2.0, "learning_rate": 0.002, "grad_norm": 1.5}), (20, {"loss": 1.5}), (30, {"loss": 1.0}))
URLS = {
    "bus": "kafka://127.0.0.1:19092",
    "blobs": "s3://flywheel-blobs?endpoint=127.0.0.1:18333",
    "registry": "http://tracker:hunter2@127.0.0.1:15000",
}


@pytest.fixture(params=["sqlite", "mlflow-server"])
def registry_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/mlflow.db"
    return request.getfixturevalue("real_stack").mlflow_url


@pytest.fixture
def registry(registry_url):
    return open_registry(registry_url)


def checkpoint(path: Path) -> Path:
    tokenizer = train_tokenizer(['<action>{"kind": "finish"}</action> hello world'] * 20, vocab_size=300)
    return save_checkpoint(build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32)), tokenizer, path)


def lineage(name: str, manifest, dataset_file: Path | None = None) -> Lineage:  # noqa: ANN001
    return Lineage(
        model_name=name,
        algorithm="sft",
        dataset_digest="sha256:" + "ab" * 32,
        dataset_manifest=manifest,
        source_offsets={"episodes/0": 120, "verdicts/3": 7},
        harness_version="tiny-planner/1",
        parent_version=None,
        metrics={"train_loss": 1.5},
        steps=30,
        history=LOSS,
        dataset_profile={"examples": 5, "examples_self": 2},
        dataset_file=dataset_file,
    )


def exported_examples(folder: Path) -> Path:
    """A training set of two examples exported as the learner exports it."""
    examples = [
        Example(f"ep-{i}", "task-1", i, "tool_use", f"<prompt {i}>", '<action>{"kind": "finish"}</action>', 1.0)
        for i in range(2)
    ]
    return export_examples(DatasetBuild(examples=examples), folder)


def dev_evaluated(name: str, version: str, run_id: str, round: int, tool_use: float) -> DevSetEvaluated:
    per = {
        c: CategoryScore(success_rate=tool_use if c == "tool_use" else 0.0, tasks=4)
        for c in ("tool_use", "memory", "skills", "sub_agent")
    }
    return DevSetEvaluated(
        producer=Producer(service="test", version="1"),
        run_id=run_id,
        round=round,
        model_name=name,
        model_version=version,
        harness_version="tiny-planner/1",
        per_category=per,
        overall=overall_score({k: v.success_rate for k, v in per.items()}),
        tokens_per_task=120.0,
        tool_calls_per_task=3.0,
    )


def rows_of_the_dataset_input(registry_url: str, run_id: str, dst: Path) -> bytes:
    """What a tracker gets from the run's "Datasets used" through MLflow's own API: the source's file, loaded."""
    import mlflow
    from mlflow.tracking import MlflowClient

    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(registry_url)
    try:
        (used,) = MlflowClient(registry_url).get_run(run_id).inputs.dataset_inputs
        assert used.dataset.schema and '"prompt"' in used.dataset.schema  # a PandasDataset: the UI shows columns
        dst.mkdir()
        return Path(mlflow.data.get_source(used).load(dst_path=str(dst))).read_bytes()
    finally:
        mlflow.set_tracking_uri(previous)


def test_a_flywheel_run_nests_its_rounds_training_and_evaluation_runs(registry, registry_url, tmp_path):
    name, run_id = f"planner-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    blobs = open_blob_store(f"file:///{tmp_path}/blobs")
    config = LoopConfig(rounds=2, learner=LearnerConfig(model_name=name))
    parent = start_parent_run(registry, config, run_id, URLS)

    shown = registry.get_run(parent)
    assert shown.experiment == name and shown.tags["flywheel_run_id"] == run_id
    assert shown.tags["registry"] == "http://tracker:***@127.0.0.1:15000" and "hunter2" not in str(shown.tags)
    assert shown.params["max_rounds"] == "2" and registry.load_dict(parent, "config.json")["rounds"] == 2

    manifest = blobs.put(b'{"episodes": ["e1"]}', "application/json")
    export = exported_examples(tmp_path / "export")
    version, _ = register_checkpoint(
        registry, blobs, checkpoint(tmp_path / "ckpt"), lineage(name, manifest, export), run_id=run_id, round=0
    )
    training = registry.get_run(version.run_id or "")
    assert training.parent_run_id == parent and training.tags["flywheel_role"] == "training"
    assert registry.metric_history(version.run_id or "", "loss") == [(10, 2.0), (20, 1.5), (30, 1.0)]
    (dataset,) = registry.datasets(version.run_id or "")
    assert dataset.source["event_offsets"] == {"episodes/0": 120, "verdicts/3": 7}
    assert dataset.source["manifest_blob"] == manifest.sha256
    assert dataset.profile == {"examples": 5, "examples_self": 2, "num_rows": 2, "num_elements": 16}  # 8 columns
    assert dataset.source["artifact_path"] == f"datasets/{dataset.name}/train.parquet"
    assert rows_of_the_dataset_input(registry_url, version.run_id or "", tmp_path / "rows") == export.read_bytes()

    evaluated = dev_evaluated(name, version.version, run_id, 0, tool_use=0.5)
    evaluation = log_dev_evaluation(registry, evaluated)
    assert log_dev_evaluation(registry, evaluated) == evaluation  # a redelivered event logs no second run
    shown_eval = registry.get_run(evaluation)
    assert shown_eval.parent_run_id == parent and shown_eval.metrics["dev_tool_use"] == 0.5
    assert shown_eval.metrics["dev_overall"] == evaluated.overall and shown_eval.params["evaluates"] == "model"

    alone, _ = register_checkpoint(  # `flywheel train` outside a flywheel run: a top-level run
        registry, blobs, checkpoint(tmp_path / "ckpt2"), lineage(name, manifest), run_id="train-x"
    )
    assert registry.get_run(alone.run_id or "").parent_run_id is None


def test_a_harness_revision_nests_under_its_flywheel_run_with_config_patch_and_ab_metrics(registry, tmp_path):
    name, run_id = f"planner-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    harness = f"harness-{uuid.uuid4().hex[:8]}"
    blobs = open_blob_store(f"file:///{tmp_path}/blobs")
    parent = start_parent_run(registry, LoopConfig(learner=LearnerConfig(model_name=name)), run_id, URLS)
    producer = Producer(service="test", version="1")
    base = publish_harness_version(registry, blobs, HarnessConfig(name=harness), producer=producer, run_id=run_id)
    revised = HarnessConfig(name=harness, instructions="Check the state.", budgets=HarnessBudgets(max_steps=9))
    placement = harness_revision_run(registry, run_id, 1)  # found by tags in any experiment: the reviser has no model
    published = publish_harness_version(
        registry,
        blobs,
        revised,
        producer=producer,
        run_id=run_id,
        parent_version=base.harness_version,
        revision_id="r1",
        round=1,
        **placement,
    )

    version = registry.resolve(published.harness_version)
    run = registry.get_run(version.run_id or "")
    assert run.parent_run_id == parent and run.experiment == name
    assert run.tags["flywheel_role"] == "harness-revision" and run.tags["round"] == "1"
    assert run.params["instructions"] == "Check the state." and run.params["budgets.max_steps"] == "9"
    assert set(run.params) >= {"name", "memory.enabled", "budgets.max_total_tokens", "skill_library_version"}
    assert "flywheel_role" not in version.tags and version.tags["revision_id"] == "r1"  # run tags stay on the run
    patch = registry.download_artifacts(version.run_id or "", "harness/patch.diff", tmp_path / "dl").read_text()
    assert patch.startswith(f"--- {base.harness_version}\n") and '+    "max_steps": 9' in patch

    decided = HarnessRevisionDecided(
        producer=producer,
        run_id=run_id,
        round=1,
        harness_name=harness,
        revision_id="r1",
        decision="accepted",
        decided_by="dev-ab",
        metrics={"paired_delta": 0.125, "wins": 2.0, "losses": 1.0},
    )
    log_revision_decision(registry, decided, published.harness_version, 1)
    assert registry.metric_history(version.run_id or "", "ab_paired_delta") == [(1, 0.125)]
    assert registry.get_run(version.run_id or "").metrics["ab_accepted"] == 1.0

    first = registry.get_run(registry.resolve(base.harness_version).run_id or "")  # outside the reviser: top-level
    assert first.parent_run_id is None and first.experiment == "harness"


def test_the_parent_run_gets_per_round_metrics_and_the_report(registry, tmp_path):
    name, run_id = f"planner-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    parent = start_parent_run(registry, LoopConfig(learner=LearnerConfig(model_name=name)), run_id, URLS)
    rows = [
        RoundRow(round=0, dev_overall=0.25, dev_per_category={"tool_use": 0.5}, admitted=40, rejected=3),
        RoundRow(
            round=1,
            dev_overall=0.5,
            dev_vs_previous={"versus": "p/1", "delta": 0.25, "interval": [-0.05, 0.5], "won": 3, "lost": 1, "tasks": 8},
            admitted=12,
            admitted_self=6,
            train_examples=60,
            train_examples_self=15,
        ),
    ]
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.html").write_text("<html>report</html>")
    (out / "report.json").write_text("{}")
    finish_parent_run(registry, parent, RunReport(run_id, rows), out)

    assert registry.metric_history(parent, "dev_overall") == [(0, 0.25), (1, 0.5)]
    assert registry.metric_history(parent, "admitted") == [(0, 40.0), (1, 12.0)]
    assert registry.metric_history(parent, "self_generated_share") == [(1, 0.25)]
    assert registry.metric_history(parent, "dev_tool_use") == [(0, 0.5)]
    assert registry.metric_history(parent, "dev_delta_vs_previous") == [(1, 0.25)]
    assert registry.metric_history(parent, "dev_delta_vs_previous_low") == [(1, -0.05)]
    assert registry.get_run(parent).status == "FINISHED"
    local = registry.download_artifacts(parent, "report", tmp_path / "download")
    assert (local / "report.html").read_text() == "<html>report</html>" and (local / "report.json").is_file()


def test_the_parent_run_names_the_code_it_ran():
    assert re.fullmatch(r"[0-9a-f]{40}", git_commit())


def test_rounds_logged_as_they_complete_are_not_logged_twice_at_the_end(registry, tmp_path):
    name, run_id = f"planner-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    parent = ParentRun(
        registry, start_parent_run(registry, LoopConfig(learner=LearnerConfig(model_name=name)), run_id, URLS)
    )
    first = RoundRow(round=0, dev_overall=0.25, admitted=40)
    assert parent.log_rounds([first]) > 0
    assert parent.log_rounds([first]) == 0  # nothing new: nothing sent
    final = [RoundRow(round=0, dev_overall=0.25, admitted=40, test_overall=0.5), RoundRow(round=1, dev_overall=0.5)]
    parent.finish(RunReport(run_id, final), tmp_path)
    assert registry.metric_history(parent.run_id, "dev_overall") == [(0, 0.25), (1, 0.5)]
    assert registry.metric_history(parent.run_id, "test_overall") == [(0, 0.5)]
    assert registry.get_run(parent.run_id).status == "FINISHED"


def test_a_registered_version_is_a_servable_mlflow_model(registry, registry_url, tmp_path):
    """What `mlflow models serve -m models:/<name>/<version>` loads: a pyfunc answering a chat with the reply text."""
    import json

    import mlflow
    import pandas as pd

    name = f"planner-{uuid.uuid4().hex[:8]}"
    blobs = open_blob_store(f"file:///{tmp_path}/blobs")
    manifest = blobs.put(b"{}", "application/json")
    version, _ = register_checkpoint(
        registry, blobs, checkpoint(tmp_path / "ckpt"), lineage(name, manifest), run_id="run-serve"
    )
    assert version.source.endswith("/model")
    previous = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
    mlflow.set_tracking_uri(registry_url)
    mlflow.set_registry_uri(registry_url)
    try:
        model = mlflow.pyfunc.load_model(f"models:/{name}/{version.version}")
        chat = [{"role": "system", "content": "You operate a phone."}, {"role": "user", "content": "Set an alarm."}]
        replies = model.predict(pd.DataFrame({"messages": [json.dumps(chat), json.dumps(chat[:1])]}))
    finally:
        mlflow.set_tracking_uri(previous[0])
        mlflow.set_registry_uri(previous[1])
    assert len(replies) == 2 and all(isinstance(r, str) for r in replies)
    assert [c.name for c in model.metadata.signature.inputs.inputs] == ["messages"]
