"""The MLflow adapter of the registry port: a tracking server (``http://``) or a local SQLite file."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from infra.config import mask_credentials
from infra.registry.port import (
    DatasetInfo,
    RegistryError,
    RegistryUnavailable,
    RunRecord,
    VersionNotFound,
    VersionRef,
)


def _ping(url: str, timeout_s: float) -> None:
    shown = mask_credentials(url)
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/health", timeout=timeout_s) as response:
            if response.status != 200:
                raise RegistryUnavailable(f"MLflow at {shown} answered /health with HTTP {response.status}")
    except (urllib.error.URLError, OSError) as exc:
        raise RegistryUnavailable(
            f"MLflow at {shown} is unreachable (waited {timeout_s:.0f}s): {mask_credentials(str(exc))}"
        ) from exc


_MAX_METRICS_PER_BATCH = 1000  # MLflow's log_batch limits
_MAX_PARAMS_PER_BATCH = 100
_MAX_EXPERIMENTS = 1000  # a page of experiments (a find_run in any experiment reads every page)


def _quoted(value: str) -> str:
    """A tag value inside a single-quoted MLflow search string."""
    return value.replace("\\", "\\\\").replace("'", "\\'")


def _masked(values: dict[str, Any]) -> dict[str, str]:
    """Params and tags as MLflow stores them, with any credentials in a URL masked."""
    return {k: mask_credentials(str(v)) for k, v in values.items()}


@contextmanager
def _version_errors(ref: str, url: str) -> Iterator[None]:
    """MLflow's errors on a model version as the port's: an unknown model or version is :class:`VersionNotFound`,
    any other answer a :class:`RegistryError` (chained, so an outage is still recognised and retried)."""
    from mlflow.exceptions import MlflowException

    try:
        yield
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            raise VersionNotFound(f"{ref!r} is not in {url}: {mask_credentials(exc.message)}") from exc
        raise RegistryError(f"{ref!r} in {url}: {mask_credentials(exc.message)}") from exc


def _lost_alias_race(message: str) -> bool:
    """An alias insert refused because a concurrent call inserted it first (SQLite and PostgreSQL wordings)."""
    text = message.lower()
    return "registered_model_aliases" in text and ("unique constraint" in text or "duplicate key" in text)


_SAVING_MODEL_CODE = threading.Lock()
"""MLflow runs a models-from-code file to save it, with a stand-in ``dbutils`` module put in ``sys.modules`` for
the while; two saves at once in one process each restore what they found, so the stand-in stays there for good,
and anything that walks ``sys.modules`` meets an object that is no module (Hypothesis's constant scan failed on it
in CI after two trainers registered at once). One save at a time per process."""


class MlflowRegistry:
    """A :class:`~infra.registry.port.Registry` on MLflow's tracking store and model registry."""

    def __init__(
        self, tracking_uri: str, *, artifact_root: Path | None = None, connect_timeout_s: float = 10.0
    ) -> None:
        self.url = mask_credentials(tracking_uri)  # for messages and logs; the client gets the real one
        self._tracking_uri = tracking_uri
        self.artifact_root = artifact_root
        if tracking_uri.startswith(("http://", "https://")):
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(int(max(30, connect_timeout_s))))
            # Outages are retried (and logged) by RetryingRegistry; MLflow's own silent retries would hide them.
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
            _ping(tracking_uri, connect_timeout_s)
        elif tracking_uri.startswith("sqlite:///"):
            Path(tracking_uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        from mlflow.tracking import MlflowClient  # deferred: importing mlflow takes seconds

        try:
            self._client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
            self._client.search_experiments(max_results=1)
        except Exception as exc:  # noqa: BLE001 - MLflow raises many types; all mean "not usable"
            raise RegistryUnavailable(
                f"MLflow registry at {self.url} is not usable: {mask_credentials(str(exc))}"
            ) from exc
        self._experiments: dict[str, str] = {}

    # -- runs ---------------------------------------------------------------------------------

    def _experiment_id(self, name: str) -> str:
        if name not in self._experiments:
            found = self._client.get_experiment_by_name(name)
            self._experiments[name] = found.experiment_id if found is not None else self._create_experiment(name)
        return self._experiments[name]

    def _create_experiment(self, name: str) -> str:
        """Creates experiment ``name``, or finds the one another run created since we looked: its id."""
        from mlflow.exceptions import MlflowException

        location = (self.artifact_root / name).resolve().as_uri() if self.artifact_root else None
        try:
            return str(self._client.create_experiment(name, artifact_location=location))
        except MlflowException as exc:
            found = self._client.get_experiment_by_name(name) if exc.error_code == "RESOURCE_ALREADY_EXISTS" else None
            if found is None:
                raise
            return str(found.experiment_id)

    def start_run(
        self,
        experiment: str,
        *,
        run_name: str | None = None,
        params: dict[str, Any] | None = None,
        tags: dict[str, str] | None = None,
        parent_run_id: str | None = None,
    ) -> str:
        from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

        shown = _masked(tags or {})
        if parent_run_id:
            shown[MLFLOW_PARENT_RUN_ID] = parent_run_id
        run = self._client.create_run(self._experiment_id(experiment), run_name=run_name, tags=shown)
        if params:
            self.log_params(run.info.run_id, params)
        return run.info.run_id

    def find_run(self, experiment: str | None, tags: dict[str, str]) -> str | None:
        if experiment is None:
            ids = self._all_experiment_ids()
        else:
            found = self._client.get_experiment_by_name(experiment)
            ids = [found.experiment_id] if found is not None else []
        if not ids:
            return None
        where = " and ".join(f"tags.`{k}` = '{_quoted(v)}'" for k, v in _masked(tags).items())
        runs = self._client.search_runs(
            ids, filter_string=where, max_results=1, order_by=["attributes.start_time DESC"]
        )
        return runs[0].info.run_id if runs else None

    def _all_experiment_ids(self) -> list[str]:
        ids: list[str] = []
        token: str | None = None
        while True:
            page = self._client.search_experiments(max_results=_MAX_EXPERIMENTS, page_token=token)
            ids.extend(e.experiment_id for e in page)
            token = page.token
            if not token:
                return ids

    def log_metric_history(self, run_id: str, history: Sequence[tuple[int, dict[str, float]]]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        rows = [Metric(k, float(v), now, step) for step, values in history for k, v in values.items()]
        for start in range(0, len(rows), _MAX_METRICS_PER_BATCH):
            self._client.log_batch(run_id, metrics=rows[start : start + _MAX_METRICS_PER_BATCH])

    def log_dataset(self, run_id: str, dataset: DatasetInfo, context: str = "training") -> None:
        from mlflow.entities import DatasetInput, InputTag
        from mlflow.exceptions import MlflowException
        from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

        from infra.registry.datasets import entity, mlflow_dataset

        file_uri = artifact_path = None
        if dataset.file is not None:
            folder = f"datasets/{dataset.name}"
            self._client.log_artifact(run_id, str(dataset.file), folder)
            artifact_path = f"{folder}/{dataset.file.name}"
            file_uri = f"{self._client.get_run(run_id).info.artifact_uri.rstrip('/')}/{artifact_path}"
        with warnings.catch_warnings():  # the schema's integer-column hint is for model signatures, not data
            warnings.simplefilter("ignore", UserWarning)
            logged = entity(dataset, mlflow_dataset(dataset, file_uri, artifact_path))
        inputs = [DatasetInput(logged, tags=[InputTag(MLFLOW_DATASET_CONTEXT, context)])]
        try:
            self._client.log_inputs(run_id, datasets=inputs)
        except MlflowException as exc:
            # Two runs logging the same dataset (experiment, name, digest) at once both insert its row: the store's
            # unique constraint refuses the second, which a second try finds and links to this run.
            if "UNIQUE constraint failed" not in str(exc) and "duplicate key" not in str(exc):
                raise
            self._client.log_inputs(run_id, datasets=inputs)

    def log_params(self, run_id: str, params: dict[str, Any]) -> None:
        from mlflow.entities import Param

        rows = [Param(k, v) for k, v in _masked(params).items()]
        for start in range(0, len(rows), _MAX_PARAMS_PER_BATCH):
            self._client.log_batch(run_id, params=rows[start : start + _MAX_PARAMS_PER_BATCH])

    def log_metrics(self, run_id: str, metrics: dict[str, float], step: int = 0) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self._client.log_batch(run_id, metrics=[Metric(k, float(v), now, step) for k, v in metrics.items()])

    def log_dict(self, run_id: str, data: dict[str, Any], artifact_file: str) -> None:
        self._client.log_dict(run_id, data, artifact_file)

    def load_dict(self, run_id: str, artifact_file: str) -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as tmp:
            path = self._client.download_artifacts(run_id, artifact_file, tmp)
            return json.loads(Path(path).read_text())

    def log_artifacts(self, run_id: str, local_dir: Path, artifact_path: str | None = None) -> None:
        self._client.log_artifacts(run_id, str(local_dir), artifact_path)

    def watch_system(self, run_id: str, interval_s: float = 10.0) -> Callable[[], None]:
        from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

        monitor = SystemMetricsMonitor(run_id, sampling_interval=interval_s, tracking_uri=self._tracking_uri)
        monitor.start()
        return monitor.finish

    def log_servable_model(self, run_id: str, checkpoint: Path, artifact_path: str) -> None:
        import mlflow
        from mlflow.models import ModelSignature
        from mlflow.types import ColSpec, Schema

        signature = ModelSignature(inputs=Schema([ColSpec("string", "messages")]), outputs=Schema([ColSpec("string")]))
        with tempfile.TemporaryDirectory(prefix="pyfunc-") as tmp, warnings.catch_warnings():
            # MLflow's hint to add an input example asks for what the explicit signature gives (its hint about type
            # hints on predict comes from the child process that loads the model, and still shows)
            warnings.simplefilter("ignore", UserWarning)
            model = Path(tmp) / "model"
            with _SAVING_MODEL_CODE:
                mlflow.pyfunc.save_model(
                    path=str(model),
                    python_model=str(Path(__file__).with_name("planner_model.py")),
                    artifacts={"checkpoint": str(checkpoint)},
                    signature=signature,
                    pip_requirements=[f"mlflow=={mlflow.__version__}", "torch", "transformers"],
                )
            self._client.log_artifacts(run_id, str(model), artifact_path)

    def download_artifacts(self, run_id: str, artifact_path: str, dst: Path) -> Path:
        dst.mkdir(parents=True, exist_ok=True)
        return Path(self._client.download_artifacts(run_id, artifact_path, str(dst)))

    def end_run(self, run_id: str, status: str = "FINISHED") -> None:
        self._client.set_terminated(run_id, status=status)

    def get_run(self, run_id: str) -> RunRecord:
        run = self._client.get_run(run_id)
        experiment = self._client.get_experiment(run.info.experiment_id).name
        return RunRecord(
            run_id=run_id,
            experiment=experiment,
            status=run.info.status,
            params=dict(run.data.params),
            metrics=dict(run.data.metrics),
            tags={k: v for k, v in run.data.tags.items() if not k.startswith("mlflow.")},
            parent_run_id=run.data.tags.get("mlflow.parentRunId"),
        )

    def metric_history(self, run_id: str, key: str) -> list[tuple[int, float]]:
        return sorted((m.step, m.value) for m in self._client.get_metric_history(run_id, key))

    def datasets(self, run_id: str) -> list[DatasetInfo]:
        inputs = self._client.get_run(run_id).inputs
        found = inputs.dataset_inputs if inputs is not None else []
        return [
            DatasetInfo(
                name=d.dataset.name,
                digest=d.dataset.digest,
                source=json.loads(d.dataset.source),
                source_type=d.dataset.source_type,
                profile=json.loads(d.dataset.profile) if d.dataset.profile else {},
            )
            for d in found
        ]

    # -- registry -----------------------------------------------------------------------------

    def register_version(
        self, name: str, run_id: str, artifact_path: str, *, tags: dict[str, str] | None = None
    ) -> VersionRef:
        from mlflow.exceptions import MlflowException

        try:  # create, not look up then create: another run may create the model between the two calls
            self._client.create_registered_model(name)
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
        run = self._client.get_run(run_id)
        source = f"{run.info.artifact_uri.rstrip('/')}/{artifact_path}"
        mv = self._client.create_model_version(name, source, run_id=run_id, tags=_masked(tags or {}))
        return self._ref(self._client.get_model_version(name, mv.version))

    def set_alias(self, name: str, alias: str, version: str) -> None:
        """Point ``alias`` at ``version``. MLflow inserts a new alias without a lock, so two processes naming the same
        alias at once can lose the insert race (a unique-constraint error); then the alias exists and one more call
        moves it, the outcome of two calls in a row."""
        from mlflow.exceptions import MlflowException

        with _version_errors(f"{name}/{version}", self.url):
            try:
                self._client.set_registered_model_alias(name, alias, str(version))
            except MlflowException as exc:
                if not _lost_alias_race(exc.message):
                    raise
                self._client.set_registered_model_alias(name, alias, str(version))

    def set_version_tag(self, name: str, version: str, key: str, value: str) -> None:
        with _version_errors(f"{name}/{version}", self.url):
            self._client.set_model_version_tag(name, str(version), key, mask_credentials(str(value)))

    def delete_version(self, name: str, version: str) -> None:
        from mlflow.exceptions import MlflowException

        try:
            self._client.delete_model_version(name, str(version))
        except MlflowException as exc:  # a retry after a call that did reach the server finds it gone
            if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
                raise

    def resolve(self, ref: str) -> VersionRef:
        from mlflow.exceptions import MlflowException

        spec = ref.removeprefix("models:/")
        try:
            if "@" in spec:
                name, alias = spec.split("@", 1)
                mv = self._client.get_model_version_by_alias(name, alias)
            elif "/" in spec:
                name, version = spec.split("/", 1)
                mv = self._client.get_model_version(name, version)
            else:
                raise VersionNotFound(f"{ref!r} is neither name@alias nor name/version")
        except MlflowException as exc:
            raise VersionNotFound(f"{ref!r} does not resolve in {self.url}: {exc.message}") from exc
        return self._ref(mv)

    def versions(self, name: str) -> list[VersionRef]:
        found = self._client.search_model_versions(f"name='{name}'")
        return sorted((self._ref(mv) for mv in found), key=lambda v: int(v.version))

    @staticmethod
    def _ref(mv: Any) -> VersionRef:
        return VersionRef(
            name=mv.name,
            version=str(mv.version),
            run_id=mv.run_id,
            source=mv.source,
            tags=dict(mv.tags or {}),
            aliases=tuple(sorted(mv.aliases or [])),
        )
