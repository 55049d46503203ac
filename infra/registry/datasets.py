"""Training sets as MLflow datasets (``mlflow.data``): what the UI's "Datasets used" shows of a run.

A dataset's source is :class:`FlywheelDatasetSource`: the event offsets it was read up to, the blob of its
manifest and, when the learner exported its rows, the URI of that file (Parquet or JSON lines) logged with the
run as an artifact. With a file the dataset is a ``PandasDataset`` of it (schema and row counts in the UI);
without one a ``MetaDataset``. The digest is ours (the manifest's sha256, clipped to MLflow's column).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlflow.data.dataset import Dataset
from mlflow.data.dataset_source import DatasetSource
from mlflow.entities import Dataset as DatasetEntity

from infra.registry.port import DatasetInfo

SOURCE_TYPE = "flywheel-event-log"
MAX_DIGEST = 36  # MLflow's column width; the full digest stays in the dataset's source
FILE_KEY = "file"
"""The source key holding the URI of the dataset's exported rows (an artifact of the run that logged it)."""
ARTIFACT_KEY = "artifact_path"
"""The source key holding that file's path among the run's artifacts."""


class FlywheelDatasetSource(DatasetSource):
    """Where a flywheel training set came from: event offsets, manifest blob, and the exported file's URI."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = dict(fields)

    @staticmethod
    def _get_source_type() -> str:
        return SOURCE_TYPE

    def load(self, dst_path: str | None = None) -> str:
        """The exported rows downloaded to ``dst_path`` (a temporary folder by default): the local file's path."""
        import mlflow

        uri = self.fields.get(FILE_KEY)
        if not uri:
            raise ValueError("this dataset was logged without its rows: its source holds only event offsets")
        return mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=dst_path)

    @staticmethod
    def _can_resolve(raw_source: Any) -> bool:
        return False  # built from our lineage, never guessed from a string

    @classmethod
    def _resolve(cls, raw_source: Any) -> FlywheelDatasetSource:
        raise NotImplementedError("a flywheel dataset source is built from its lineage")

    def to_dict(self) -> dict[str, Any]:
        return dict(sorted(self.fields.items()))

    @classmethod
    def from_dict(cls, source_dict: dict[Any, Any]) -> FlywheelDatasetSource:
        return cls(source_dict)


def _register() -> None:
    """Let ``mlflow.data.get_source`` rebuild our sources from a run's inputs (in this process)."""
    from mlflow.data.dataset_source_registry import register_dataset_source

    register_dataset_source(FlywheelDatasetSource)  # type: ignore[arg-type]  # it takes the class, as MLflow's own do


_register()


def read_rows(path: Path) -> Any:
    """The exported rows as a pandas DataFrame (Parquet, JSON lines or a JSON array)."""
    import pandas as pd  # type: ignore[import-untyped]

    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_json(path, lines=path.suffix == ".jsonl")


def mlflow_dataset(dataset: DatasetInfo, file_uri: str | None = None, artifact_path: str | None = None) -> Dataset:
    """``dataset`` as an ``mlflow.data`` dataset; with ``file_uri`` (its rows, already logged) a PandasDataset."""
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.data.pandas_dataset import PandasDataset

    fields = dict(dataset.source)
    if file_uri:
        fields[FILE_KEY], fields[ARTIFACT_KEY] = file_uri, artifact_path
    source = FlywheelDatasetSource(fields)
    digest = dataset.digest.removeprefix("sha256:")[:MAX_DIGEST]
    if file_uri and dataset.file is not None:
        return PandasDataset(read_rows(dataset.file), source=source, name=dataset.name, digest=digest)
    return MetaDataset(source, name=dataset.name, digest=digest)  # type: ignore[abstract]  # profile: None


def entity(dataset: DatasetInfo, logged: Dataset) -> DatasetEntity:
    """The entity MLflow stores: the dataset's own fields, its profile with our counts added."""
    shown = logged._to_mlflow_entity()  # what mlflow.log_input logs; the client API takes the entity
    profile = {**json.loads(shown.profile or "{}"), **dataset.profile}
    return DatasetEntity(
        name=shown.name,
        digest=shown.digest,
        source_type=shown.source_type,
        source=shown.source,
        schema=shown.schema,
        profile=json.dumps(profile, sort_keys=True) if profile else None,
    )
