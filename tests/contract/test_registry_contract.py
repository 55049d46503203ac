"""The registry contract, run against MLflow on a SQLite file and the real MLflow server alike."""

from __future__ import annotations

import pytest

from infra.registry.port import VersionNotFound

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


def test_unknown_alias_raises_version_not_found(registry, unique):
    with pytest.raises(VersionNotFound, match=f"nothing-{unique}@production"):
        registry.resolve(f"nothing-{unique}@production")
