"""MLflow tracking server + model registry: SQLite backend under ``<stack>/mlflow/``, artifacts proxied
to the stack's S3 store (``s3://<mlflow bucket>/artifacts``), background job execution off, one worker.

In proxied-artifact mode clients need only the tracking URL, no S3 credentials.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import urllib.request
from pathlib import Path

from infra.stack.base import Echo, Service, StackError

MLFLOW_BUCKET = "flywheel-mlflow"


class MlflowServer(Service):
    name = "mlflow"
    requires = ("s3",)

    @property
    def url(self) -> str:
        return f"http://{self.settings.host}:{self.settings.mlflow_port}"

    def ports(self) -> list[int]:
        return [self.settings.mlflow_port]

    @property
    def bucket(self) -> str:
        return MLFLOW_BUCKET if MLFLOW_BUCKET in self.settings.buckets else self.settings.buckets[-1]

    @property
    def artifacts_destination(self) -> str:
        return f"s3://{self.bucket}/artifacts"

    @property
    def db_path(self) -> Path:
        return self.home / "mlflow.db"

    def listening(self) -> list[str]:
        return [f"{self.url}  (tracking + registry, sqlite {self.db_path}, artifacts {self.artifacts_destination})"]

    def _mlflow(self) -> list[str]:
        beside = Path(sys.executable).parent / "mlflow"
        if beside.is_file():
            return [str(beside)]
        found = shutil.which("mlflow")
        if found:
            return [found]
        return [sys.executable, "-m", "mlflow"]

    def provision(self, echo: Echo) -> None:
        if importlib.util.find_spec("mlflow") is None:  # pragma: no cover - a project dependency
            raise StackError("the `mlflow` package is not installed in this environment")
        echo(f"mlflow: server from {' '.join(self._mlflow())}")

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return [
            *self._mlflow(),
            "server",
            "--host", self.settings.host,
            "--port", str(self.settings.mlflow_port),
            "--backend-store-uri", f"sqlite:///{self.db_path}",
            "--artifacts-destination", self.artifacts_destination,
            "--workers", "1",
        ]  # fmt: skip

    def env(self) -> dict[str, str]:
        s = self.settings
        return {
            "MLFLOW_S3_ENDPOINT_URL": f"http://{s.host}:{s.s3_port}",
            "AWS_ACCESS_KEY_ID": s.s3_access_key,
            "AWS_SECRET_ACCESS_KEY": s.s3_secret_key.get_secret_value(),
            "AWS_DEFAULT_REGION": "us-east-1",
            "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
            "PYTHONUNBUFFERED": "1",
        }

    def probe(self, timeout_s: float) -> None:
        req = urllib.request.Request(
            f"{self.url}/api/2.0/mlflow/experiments/search?max_results=1",
            headers={"Accept": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 - loopback http
            body = json.loads(resp.read() or b"{}")
        if not isinstance(body, dict):
            raise StackError(f"unexpected answer from {self.url}: {body!r}")
