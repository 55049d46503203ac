"""The registry port: training/eval runs with lineage, versioned models and harness configs, aliases."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


class RegistryError(RuntimeError):
    """Base class of registry failures."""


class RegistryUnavailable(RegistryError):
    """The tracking server (or the SQLite file) could not be reached; the message names the URL."""


class VersionNotFound(RegistryError, LookupError):
    """A ``name@alias`` or ``name/version`` that does not resolve."""


@dataclass(frozen=True)
class VersionRef:
    """One registered version of a model or harness config."""

    name: str
    version: str
    run_id: str | None
    source: str
    tags: dict[str, str] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()

    @property
    def uri(self) -> str:
        return f"models:/{self.name}/{self.version}"


@dataclass(frozen=True)
class RunRecord:
    """What a run logged: params, latest metrics, tags, status."""

    run_id: str
    experiment: str
    status: str
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]
    parent_run_id: str | None = None


@dataclass(frozen=True)
class DatasetInfo:
    """A training set as a run input: what it is (name, digest) and where it came from (``source``: e.g. the
    event offsets it was read up to and the blob of its manifest), with a small ``profile`` (counts)."""

    name: str
    digest: str
    source: dict[str, Any]
    source_type: str = "flywheel-event-log"
    profile: dict[str, Any] = field(default_factory=dict)
    file: Path | None = None
    """The dataset's rows exported (Parquet or JSON lines): logged with the run as an artifact and named in the
    source (``source["file"]``, its URI; ``source["artifact_path"]``, its path among the run's artifacts)."""


@runtime_checkable
class Registry(Protocol):
    url: str

    def start_run(
        self,
        experiment: str,
        *,
        run_name: str | None = None,
        params: dict[str, Any] | None = None,
        tags: dict[str, str] | None = None,
        parent_run_id: str | None = None,
    ) -> str:
        """A new run; with ``parent_run_id`` it is nested under that run (same experiment) in the UI."""
        ...

    def find_run(self, experiment: str | None, tags: dict[str, str]) -> str | None:
        """The newest run of ``experiment`` (None: of any experiment) whose tags include all of ``tags``; None if
        none (or no experiment)."""
        ...

    def log_params(self, run_id: str, params: dict[str, Any]) -> None: ...

    def log_metrics(self, run_id: str, metrics: dict[str, float], step: int = 0) -> None: ...

    def log_metric_history(self, run_id: str, history: Sequence[tuple[int, dict[str, float]]]) -> None:
        """Metrics at many steps at once: ``(step, {name: value})`` rows, e.g. a loss curve."""
        ...

    def log_dataset(self, run_id: str, dataset: DatasetInfo, context: str = "training") -> None:
        """Record ``dataset`` as an input of the run (MLflow's "Datasets used"), with its rows when it has a file."""
        ...

    def metric_history(self, run_id: str, key: str) -> list[tuple[int, float]]:
        """Every (step, value) of metric ``key``, by step."""
        ...

    def datasets(self, run_id: str) -> list[DatasetInfo]:
        """The dataset inputs of a run."""
        ...

    def log_dict(self, run_id: str, data: dict[str, Any], artifact_file: str) -> None: ...

    def load_dict(self, run_id: str, artifact_file: str) -> dict[str, Any]: ...

    def log_artifacts(self, run_id: str, local_dir: Path, artifact_path: str | None = None) -> None: ...

    def watch_system(self, run_id: str, interval_s: float = 10.0) -> Callable[[], None]:
        """Record CPU, memory, disk and network use as the run's system metrics until the returned stop is called."""
        ...

    def log_servable_model(self, run_id: str, checkpoint: Path, artifact_path: str) -> None:
        """The checkpoint as a model MLflow can serve (``mlflow models serve``), under ``artifact_path``."""
        ...

    def download_artifacts(self, run_id: str, artifact_path: str, dst: Path) -> Path: ...

    def end_run(self, run_id: str, status: str = "FINISHED") -> None: ...

    def get_run(self, run_id: str) -> RunRecord: ...

    def register_version(
        self, name: str, run_id: str, artifact_path: str, *, tags: dict[str, str] | None = None
    ) -> VersionRef: ...

    def set_alias(self, name: str, alias: str, version: str) -> None: ...

    def set_version_tag(self, name: str, version: str, key: str, value: str) -> None: ...

    def delete_version(self, name: str, version: str) -> None:
        """Remove ``name/version`` (its run stays); a version already gone is not an error."""
        ...

    def resolve(self, ref: str) -> VersionRef:
        """``name@alias``, ``name/version`` or the same behind ``models:/``."""
        ...

    def versions(self, name: str) -> list[VersionRef]: ...
