"""Lineage on the real MLflow server and S3 store: run, tagged version, @candidate, promotion, hot reload."""

from __future__ import annotations

import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bus_schemas.codec import decode, encode
from bus_schemas.envelope import Producer
from bus_schemas.events.training import CategoryScore, DevSetEvaluated, overall_score
from infra.bootstrap import open_blob_store, open_registry
from infra.config import Settings
from learner.model import PlannerPolicy, build_tiny_model, save_checkpoint, train_tokenizer
from learner.registry import (
    CANDIDATE,
    PRODUCTION,
    REQUEST_TAG,
    Lineage,
    ProductionPolicy,
    promote_if_better,
    register_checkpoint,
    registered_for_request,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def servers(real_stack):
    stack = Settings().stack
    blobs = open_blob_store(
        f"s3://flywheel-blobs?endpoint={real_stack.host}:{real_stack.s3_port}",
        Settings(s3_access_key=stack.s3_access_key, s3_secret_key=stack.s3_secret_key),
    )
    return open_registry(real_stack.mlflow_url), blobs


def checkpoint(path: Path, seed: int) -> Path:
    from learner.model import TinyModelConfig

    tokenizer = train_tokenizer(['<action>{"kind": "finish"}</action> hello world'] * 20, vocab_size=300)
    return save_checkpoint(build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32, seed=seed)), tokenizer, path)


def evaluated(name: str, version: str, tool_use: float) -> DevSetEvaluated:
    per = {
        c: CategoryScore(success_rate=tool_use if c == "tool_use" else 0.0, tasks=4)
        for c in ("tool_use", "memory", "skills", "sub_agent")
    }
    return DevSetEvaluated(
        producer=Producer(service="test", version="1"),
        run_id="r",
        model_name=name,
        model_version=version,
        harness_version="tiny@sha256:x",
        per_category=per,
        overall=overall_score({k: v.success_rate for k, v in per.items()}),
        tokens_per_task=1.0,
        tool_calls_per_task=1.0,
    )


def lineage(name: str, blobs, parent: str | None) -> Lineage:  # noqa: ANN001
    return Lineage(
        model_name=name,
        algorithm="sft" if parent is None else "rl",
        dataset_digest="sha256:" + "ab" * 32,
        dataset_manifest=blobs.put(b'{"examples": []}', "application/json"),
        source_offsets={"episodes/0": 120, "verdicts/3": 7},
        harness_version="tiny-planner@sha256:cd",
        parent_version=parent,
        params={"lr": 0.002},
        metrics={"train_loss": 0.5},
        steps=10,
        wall_time_s=1.5,
    )


def test_versions_carry_full_lineage_and_promotion_moves_production(servers, tmp_path: Path) -> None:
    registry, blobs = servers
    name = f"planner-{uuid.uuid4().hex[:8]}"
    first, events = register_checkpoint(
        registry, blobs, checkpoint(tmp_path / "a", 0), lineage(name, blobs, None), run_id="run-x"
    )
    assert [e.event_type for e in events] == ["TrainingRunStarted", "TrainingRunCompleted", "ModelVersionRegistered"]
    assert all(decode(encode(e)) == e for e in events)
    registered = events[-1]
    assert registered.model_version == first.version and registered.registry_uri == f"models:/{name}/{first.version}"
    assert blobs.exists(registered.checkpoint.sha256)
    assert events[0].source_offsets == {"episodes/0": 120, "verdicts/3": 7}
    run = registry.get_run(first.run_id or "")
    assert run.params["dataset_digest"] == "sha256:" + "ab" * 32 and run.params["harness_version"].startswith("tiny")
    assert run.metrics["train_loss"] == 0.5
    assert registry.load_dict(first.run_id or "", "lineage.json")["source_offsets"]["episodes/0"] == 120
    assert registry.resolve(f"{name}@{CANDIDATE}").version == first.version
    assert first.tags["parent_version"] == "" and first.tags["checkpoint_sha256"] == registered.checkpoint.sha256

    served = ProductionPolicy(registry, name, tmp_path / "cache", lambda d, v: PlannerPolicy.from_dir(d, name=v))
    assert promote_if_better(registry, evaluated(name, first.version, 0.5))
    assert served.refresh() and served.policy.name == f"{name}/{first.version}"
    assert not served.refresh()  # nothing moved

    second, _ = register_checkpoint(
        registry, blobs, checkpoint(tmp_path / "b", 1), lineage(name, blobs, first.version), run_id="run-x"
    )
    assert registry.resolve(f"{name}/{second.version}").tags["parent_version"] == first.version
    assert not promote_if_better(registry, evaluated(name, second.version, 0.25))  # worse: production stays
    assert registry.resolve(f"{name}@{PRODUCTION}").version == first.version
    assert not promote_if_better(registry, evaluated(name, second.version, 0.75), require_approval=True)
    assert registry.resolve(f"{name}/{second.version}").tags["awaiting_approval"] == "true"
    assert promote_if_better(registry, evaluated(name, second.version, 0.75))
    assert served.refresh() and served.version == second.version  # the rollout worker hot-reloads
    assert registry.resolve(f"{name}/{second.version}").tags["dev_overall"] == f"{0.375:.6f}"


class _RegistersAtOnce:
    """A registry client whose ``register_version`` returns only when every such client has registered: two
    trainers that answered one request both register before either looks for the other's version."""

    def __init__(self, inner, barrier: threading.Barrier) -> None:  # noqa: ANN001
        self.inner, self.barrier = inner, barrier

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.inner, name)

    def register_version(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        version = self.inner.register_version(*args, **kwargs)
        self.barrier.wait(timeout=60)
        return version


@pytest.mark.parametrize("store", ["mlflow-server", "sqlite"])
def test_two_trainers_that_answer_one_request_leave_one_version_and_publish_its_events(
    store, real_stack, servers, tmp_path: Path
) -> None:
    registry, blobs = servers
    if store == "sqlite":
        registry, blobs = open_registry(f"sqlite:///{tmp_path}/mlflow.db"), open_blob_store(f"file://{tmp_path}/b")
    name = f"planner-{uuid.uuid4().hex[:8]}"
    request = f"request-{uuid.uuid4().hex[:8]}"
    barrier = threading.Barrier(2)
    clients = [_RegistersAtOnce(open_registry(registry.url), barrier) for _ in range(2)]

    def train_and_register(k: int):  # noqa: ANN202
        path = checkpoint(tmp_path / f"trainer-{k}", k)  # each trainer's own weights
        return register_checkpoint(
            clients[k], blobs, path, lineage(name, blobs, None), run_id="run-x", request_id=request
        )

    with ThreadPoolExecutor(2) as pool:
        (first, first_events), (second, second_events) = pool.map(train_and_register, range(2))

    [kept] = [v for v in registry.versions(name) if v.tags.get(REQUEST_TAG) == request]
    assert [v.version for v in registry.versions(name)] == [kept.version] == ["1"]  # version 2 was deleted
    assert first.version == second.version == kept.version
    assert first_events == second_events  # the same ids: the bus keeps one copy whichever commit lands
    assert (
        first_events[-1].model_version == kept.version
        and first_events[-1].checkpoint.sha256 == (kept.tags["checkpoint_sha256"])
    )
    assert registry.resolve(f"{name}@{CANDIDATE}").version == kept.version
    assert registered_for_request(registry, name, request) == first_events  # and so does a redelivery
    assert "dbutils" not in sys.modules  # MLflow's stand-in while it saved the model code: two saves at once left it
