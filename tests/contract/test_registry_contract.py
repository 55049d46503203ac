"""The registry contract, run against MLflow on a SQLite file and the real MLflow server alike."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from infra.bootstrap import open_registry
from infra.registry.port import DatasetInfo, VersionNotFound

pytestmark = pytest.mark.contract


def test_runs_keep_params_metrics_tags_and_dicts(registry, unique):
    run_id = registry.start_run(f"contract-{unique}", run_name="sft", params={"lr": 0.001}, tags={"round": "1"})
    registry.log_metrics(run_id, {"loss": 0.5}, step=1)
    registry.log_dict(run_id, {"instructions": "be precise"}, "harness/config.json")
    registry.end_run(run_id)
    run = registry.get_run(run_id)
    assert run.params == {"lr": "0.001"}
    assert run.metrics == {"loss": 0.5}
    assert run.tags == {"round": "1"}
    assert run.status == "FINISHED"
    assert registry.load_dict(run_id, "harness/config.json") == {"instructions": "be precise"}


def test_versions_aliases_and_tags_round_trip(registry, unique):
    name = f"planner-{unique}"
    versions = []
    for i in range(2):
        run_id = registry.start_run(f"contract-{unique}")
        registry.log_dict(run_id, {"weights": i}, "model/config.json")
        registry.end_run(run_id)
        versions.append(registry.register_version(name, run_id, "model", tags={"dataset_digest": f"d{i}"}))
    assert [v.version for v in versions] == ["1", "2"]
    registry.set_alias(name, "production", "1")
    registry.set_alias(name, "candidate", "2")
    registry.set_version_tag(name, "2", "parent_version", "1")

    candidate = registry.resolve(f"{name}@candidate")
    assert candidate.version == "2"
    assert candidate.tags == {"dataset_digest": "d1", "parent_version": "1"}
    assert candidate.aliases == ("candidate",)
    assert registry.resolve(f"models:/{name}@production").version == "1"
    assert registry.resolve(f"{name}/2").run_id == versions[1].run_id

    registry.set_alias(name, "production", "2")
    assert registry.resolve(f"{name}@production").aliases == ("candidate", "production")
    assert [v.version for v in registry.versions(name)] == ["1", "2"]


def test_a_deleted_version_is_gone_and_deleting_it_again_is_no_error(registry, unique):
    name = f"planner-{unique}"
    for _ in range(2):
        run_id = registry.start_run(f"contract-{unique}")
        registry.end_run(run_id)
        registry.register_version(name, run_id, "model")
    registry.delete_version(name, "2")
    assert [v.version for v in registry.versions(name)] == ["1"]
    with pytest.raises(VersionNotFound):
        registry.resolve(f"{name}/2")
    registry.delete_version(name, "2")  # a retried call whose first try reached the server
    assert [v.version for v in registry.versions(name)] == ["1"]


def test_runs_that_register_a_new_model_at_once_each_get_a_version(registry, unique):
    """Runs sharing one registry (parallel loops, the test suite's workers) that create the same experiment and
    register the first versions of the same model at the same moment: none fails because another created the
    model or the experiment between its lookup and its create (MLflow's RESOURCE_ALREADY_EXISTS)."""
    clients = [registry, *(open_registry(registry.url) for _ in range(3))]
    start = threading.Barrier(len(clients))

    def register(client):  # noqa: ANN001, ANN202
        start.wait()
        run_id = client.start_run(f"contract-race-{unique}")
        client.end_run(run_id)
        return client.register_version(f"planner-{unique}", run_id, "model")

    with ThreadPoolExecutor(len(clients)) as pool:
        versions = list(pool.map(register, clients))
    assert sorted(int(v.version) for v in versions) == [1, 2, 3, 4]
    assert len({registry.get_run(v.run_id).experiment for v in versions}) == 1


def test_unknown_alias_raises_version_not_found(registry, unique):
    with pytest.raises(VersionNotFound, match=f"nothing-{unique}@production"):
        registry.resolve(f"nothing-{unique}@production")


def test_tags_and_aliases_on_an_unregistered_model_raise_the_ports_error(registry, unique):
    with pytest.raises(VersionNotFound, match=f"nothing-{unique}/1"):
        registry.set_version_tag(f"nothing-{unique}", "1", "dev_overall", "0.5")
    with pytest.raises(VersionNotFound, match=f"nothing-{unique}/1"):
        registry.set_alias(f"nothing-{unique}", "production", "1")
    run_id = registry.start_run(f"contract-{unique}")
    registry.log_dict(run_id, {"weights": 0}, "model/config.json")
    registry.register_version(f"planner-{unique}", run_id, "model")
    with pytest.raises(VersionNotFound, match=f"planner-{unique}/7"):  # a model that exists, a version that does not
        registry.set_version_tag(f"planner-{unique}", "7", "dev_overall", "0.5")


def test_runs_nest_under_a_parent_found_by_its_tags(registry, unique):
    experiment = f"contract-{unique}"
    assert registry.find_run(experiment, {"flywheel_run_id": unique}) is None  # no such experiment yet
    parent = registry.start_run(experiment, run_name="flywheel", tags={"flywheel_run_id": unique, "role": "run"})
    registry.start_run(experiment, tags={"flywheel_run_id": "someone-else", "role": "run"})
    assert registry.find_run(experiment, {"flywheel_run_id": unique, "role": "run"}) == parent
    assert registry.find_run(experiment, {"flywheel_run_id": unique, "role": "training"}) is None
    assert registry.find_run(None, {"flywheel_run_id": unique, "role": "run"}) == parent  # in any experiment
    assert registry.find_run(None, {"flywheel_run_id": f"none-{unique}"}) is None
    child = registry.start_run(experiment, run_name="round-0-sft", parent_run_id=parent)
    assert registry.get_run(child).parent_run_id == parent and registry.get_run(parent).parent_run_id is None


def test_a_metric_history_keeps_every_step(registry, unique):
    run_id = registry.start_run(f"contract-{unique}")
    history = [(step, {"loss": 5.0 - step / 100, "learning_rate": 0.001}) for step in range(1, 601)]
    registry.log_metric_history(run_id, history)  # 1,200 values: more than the 1,000 MLflow takes in one batch
    assert registry.metric_history(run_id, "loss") == [(step, values["loss"]) for step, values in history]
    assert registry.get_run(run_id).metrics["loss"] == pytest.approx(5.0 - 600 / 100)


def test_a_dataset_is_a_run_input_with_its_source(registry, unique):
    run_id = registry.start_run(f"contract-{unique}")
    digest = "sha256:" + "cd" * 32
    source = {"event_offsets": {"episodes/0": 42}, "manifest_blob": "ef" * 32}
    registry.log_dataset(run_id, DatasetInfo(name="planner-train", digest=digest, source=source, profile={"n": 3}))
    (found,) = registry.datasets(run_id)
    assert found.name == "planner-train" and digest.removeprefix("sha256:").startswith(found.digest)
    assert found.source == source and found.profile == {"n": 3} and found.source_type == "flywheel-event-log"


def test_runs_that_log_the_same_dataset_at_once_each_have_it_as_an_input(registry, unique):
    """Two trainers on the same training set (a zombie and the new owner of its request): the store's row for the
    dataset is created by one of them, and neither fails."""
    clients = [registry, *(open_registry(registry.url) for _ in range(3))]
    runs = [registry.start_run(f"contract-{unique}") for _ in clients]
    start = threading.Barrier(len(clients))
    info = DatasetInfo(name="planner-train", digest="sha256:" + "ab" * 32, source={"manifest_blob": "x"})

    def log(k: int) -> None:
        start.wait(timeout=60)
        clients[k].log_dataset(runs[k], info)

    with ThreadPoolExecutor(len(clients)) as pool:
        list(pool.map(log, range(len(clients))))
    assert all([d.name for d in registry.datasets(run)] == ["planner-train"] for run in runs)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_a_dataset_with_its_rows_is_an_mlflow_dataset_whose_source_is_the_logged_file(
    registry, unique, tmp_path, suffix
):
    import pandas as pd

    rows = pd.DataFrame({"episode_id": ["e1", "e2", "e3"], "prompt": ["a", "b", "c"], "weight": [1.0, 0.5, 1.0]})
    export = tmp_path / f"train{suffix}"
    rows.to_parquet(export) if suffix == ".parquet" else rows.to_json(export, orient="records", lines=True)
    run_id = registry.start_run(f"contract-{unique}")
    digest = "sha256:" + "ab" * 32
    source = {"event_offsets": {"curation/0": 9}, "manifest_blob": "ef" * 32}
    info = DatasetInfo(name="planner-train", digest=digest, source=source, profile={"examples": 3}, file=export)
    registry.log_dataset(run_id, info)

    (found,) = registry.datasets(run_id)
    assert found.name == "planner-train" and digest.removeprefix("sha256:").startswith(found.digest)
    assert found.source_type == "flywheel-event-log" and found.source["event_offsets"] == {"curation/0": 9}
    assert found.source["artifact_path"] == f"datasets/planner-train/train{suffix}"
    assert found.source["file"].endswith("/" + found.source["artifact_path"])
    assert found.profile == {"examples": 3, "num_rows": 3, "num_elements": 9}  # ours and MLflow's (PandasDataset)
    local = registry.download_artifacts(run_id, found.source["artifact_path"], tmp_path / "dl")
    assert local.read_bytes() == export.read_bytes()


def test_more_params_than_one_batch_holds(registry, unique):
    run_id = registry.start_run(f"contract-{unique}", params={f"p{i:03d}": i for i in range(250)})
    assert registry.get_run(run_id).params == {f"p{i:03d}": str(i) for i in range(250)}


def test_system_metrics_are_recorded_while_watched(registry, unique):
    import time

    run_id = registry.start_run(f"contract-{unique}")
    stop = registry.watch_system(run_id, interval_s=0.5)
    time.sleep(3)
    stop()
    cpu = registry.metric_history(run_id, "system/cpu_utilization_percentage")
    memory = registry.metric_history(run_id, "system/system_memory_usage_megabytes")
    assert len(cpu) >= 2 and memory and all(value > 0 for _, value in memory)
    time.sleep(1.5)
    assert len(registry.metric_history(run_id, "system/cpu_utilization_percentage")) == len(cpu)  # stopped
