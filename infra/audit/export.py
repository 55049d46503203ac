"""``flywheel export trajectories``: admitted trajectories (their bundles plus provenance) as JSONL or Parquet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import orjson

from bus_schemas.events import TrajectoryAdmitted
from bus_schemas.topics import TOPIC_CURATION
from infra.bootstrap import Ports
from infra.events import decodable

Format = Literal["jsonl", "parquet"]


def admitted_rows(ports: Ports) -> Iterator[dict]:
    """One row per admitted trajectory: ids, round, category, tags, weight, provenance, and the bundle."""
    for event in decodable(ports.bus.replay(TOPIC_CURATION)):
        if not isinstance(event, TrajectoryAdmitted):
            continue
        bundle = orjson.loads(ports.blobs.get(event.trajectory))
        yield {
            "episode_id": event.episode_id,
            "task_id": event.task_id,
            "run_id": event.run_id,
            "round": event.round,
            "category": event.category,
            "tags": list(event.tags),
            "weight": event.weight,
            "policy_version": event.provenance.policy_version,
            "harness_version": event.provenance.harness_version,
            "backend": event.provenance.backend,
            "trajectory_sha256": event.trajectory.sha256,
            "goal": bundle.get("goal", ""),
            "steps": orjson.dumps(bundle.get("steps", [])).decode(),
        }


def export_trajectories(ports: Ports, out_dir: Path, fmt: Format) -> tuple[Path, int]:
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = list(admitted_rows(ports))
    if fmt == "jsonl":
        path = out_dir / "trajectories.jsonl"
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = out_dir / "trajectories.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
    return path, len(rows)
