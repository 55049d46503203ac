"""Harness configs versioned in the registry (MLflow on SQLite and the real server) and hot-reloaded."""

from __future__ import annotations

import pytest

from bus_schemas.envelope import Producer
from harness_service.config import HarnessBudgets, HarnessConfig
from harness_service.live_config import LiveConfig
from harness_service.versions import load_harness_version, publish_harness_version
from infra.blobs.filesystem import FileBlobStore

pytestmark = pytest.mark.contract

PRODUCER = Producer(service="test", version="1")


def test_versions_aliases_and_hot_reload(registry, tmp_path, unique):
    blobs = FileBlobStore(tmp_path / "blobs")
    name = f"harness-{unique}"
    v1 = HarnessConfig(name=name)
    v2 = HarnessConfig(name=name, instructions="Verify state before finishing.", budgets=HarnessBudgets(max_steps=12))

    first = publish_harness_version(registry, blobs, v1, producer=PRODUCER, run_id=unique, aliases=("production",))
    second = publish_harness_version(
        registry, blobs, v2, producer=PRODUCER, run_id=unique, aliases=("candidate",), parent_version="1"
    )
    assert (first.harness_version, second.harness_version) == (f"{name}/1", f"{name}/2")

    config, label = load_harness_version(registry, f"{name}@production")
    assert config == v1 and label == f"{name}/1"
    config, label = load_harness_version(registry, f"{name}@candidate")
    assert config == v2 and label == f"{name}/2"
    tags = registry.resolve(f"{name}@candidate").tags
    assert tags["digest"] == v2.digest() and tags["parent_version"] == "1"

    live = LiveConfig(v1, version=f"{name}/1")
    assert live.apply(second, blobs)
    assert live() == v2 and live.version == f"{name}/2"
    assert not live.apply(second.model_copy(update={"harness_name": "someone-else"}), blobs)


def test_a_version_shows_its_config_as_params_and_its_patch_against_the_parent(registry, tmp_path, unique):
    blobs = FileBlobStore(tmp_path / "blobs")
    name = f"harness-{unique}"
    base = HarnessConfig(name=name)
    revised = HarnessConfig(
        name=name, instructions="Verify state before finishing.", budgets=HarnessBudgets(max_steps=12)
    )
    publish_harness_version(registry, blobs, base, producer=PRODUCER, run_id=unique)
    publish_harness_version(registry, blobs, revised, producer=PRODUCER, run_id=unique, parent_version="1")
    ref = registry.resolve(f"{name}/2")
    params = registry.get_run(ref.run_id).params
    assert params["budgets.max_steps"] == "12" and params["instructions"] == "Verify state before finishing."
    assert set(params) >= {"name", "memory.enabled", "budgets.max_total_tokens", "skill_library_version"}
    patch = (registry.download_artifacts(ref.run_id, "harness/patch.diff", tmp_path / "dl")).read_text()
    assert patch.startswith(f"--- {name}/1\n") and '-    "max_steps": ' in patch and '+    "max_steps": 12' in patch
    assert '+  "instructions": "Verify state before finishing."' in patch
    first = registry.resolve(f"{name}/1")
    shipped = registry.download_artifacts(first.run_id, "harness", tmp_path / "dl1")
    assert [p.name for p in shipped.iterdir()] == ["config.json"]  # the first version has no parent to diff
