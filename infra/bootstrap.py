"""The one place where adapters are chosen: a URL per port, from flags, env (FLYWHEEL_*) or flywheel.toml.

bus       kafka://host:port[,host:port]   | sqlite:///path/bus.db[?partitions=3&session_timeout_s=10&max_bytes=N]
          (either with ?namespace=NAME to prefix every topic and consumer group)
blobs     s3://bucket?endpoint=host:port[&secure=true] | file:///abs/dir | file:relative/dir
registry  http(s)://mlflow-host:port       | sqlite:///path/mlflow.db
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from infra.blobs.port import BlobStore
from infra.bus.port import Bus
from infra.config import Settings, mask_credentials
from infra.registry.port import Registry

SUPPORTED = {
    "bus": ("kafka://", "sqlite:///"),
    "blobs": ("s3://", "file:"),
    "registry": ("http://", "https://", "sqlite:///"),
}


class UnsupportedURL(ValueError):
    """A URL whose scheme no adapter of that port handles, or whose parameters are invalid."""


def _reject(port: str, url: str) -> UnsupportedURL:
    return UnsupportedURL(
        f"unsupported {port} URL {mask_credentials(url)!r}; supported: {', '.join(s + '...' for s in SUPPORTED[port])}"
    )


Namespace = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,100}$")]


class _BusParams(BaseModel):
    """The query parameters every bus URL may carry; anything else is a typo and is refused."""

    model_config = ConfigDict(extra="forbid")

    namespace: Namespace | None = None
    session_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 10.0


class _EmbeddedBusParams(_BusParams):
    partitions: Annotated[int, Field(ge=1, le=1024)] = 3
    max_bytes: Annotated[int, Field(ge=1)] | None = None


def bus_params(url: str) -> _BusParams:
    """The validated query parameters of a bus URL, e.g. ``?partitions=0`` is refused here, not by a later
    ZeroDivisionError."""
    model = _EmbeddedBusParams if url.startswith("sqlite:///") else _BusParams
    try:
        return model.model_validate(_query(url))
    except ValidationError as exc:
        problems = "; ".join(
            f"?{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_input=False, include_url=False)
        )
        known = ", ".join(sorted(model.model_fields))
        raise UnsupportedURL(
            f"bus URL {mask_credentials(url)!r} has invalid parameters ({problems}); known: {known}"
        ) from None


def _local_path(url: str, scheme: str) -> Path:
    """``sqlite:///rel/path`` -> ``rel/path``; ``sqlite:////abs/path`` -> ``/abs/path`` (SQLAlchemy's rule)."""
    return Path(urlsplit(url).path[1:] if url.startswith(f"{scheme}:///") else urlsplit(url).path)


def _file_path(url: str) -> Path:
    """RFC 8089: ``file:///abs/dir`` is absolute; ``file:rel/dir`` (no authority) is relative to the cwd."""
    path = urlsplit(url).path
    return Path("/" + path.lstrip("/")) if url.startswith("file:///") else Path(path)


def _query(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


def open_bus(url: str, settings: Settings | None = None) -> Bus:
    """The bus at ``url``; a ``namespace`` query parameter prefixes every topic and group name."""
    if not url.startswith(SUPPORTED["bus"]):
        raise _reject("bus", url)
    namespace = bus_params(url).namespace
    bus = _open_bus(url, settings or Settings())
    if namespace:
        from infra.bus.namespaced import NamespacedBus

        return NamespacedBus(bus, namespace)
    return bus


def _open_bus(url: str, settings: Settings) -> Bus:
    params = bus_params(url)
    if url.startswith("kafka://"):
        from infra.bus.kafka import KafkaBus

        if not urlsplit(url).netloc:
            raise UnsupportedURL(f"bus URL {mask_credentials(url)!r} names no broker; use kafka://host:port")
        return KafkaBus(
            urlsplit(url).netloc,
            connect_timeout_s=settings.connect_timeout_s,
            session_timeout_s=params.session_timeout_s,
        )
    if url.startswith("sqlite:///"):
        from infra.bus.embedded import EmbeddedBus

        assert isinstance(params, _EmbeddedBusParams)
        return EmbeddedBus(
            _local_path(url, "sqlite"),
            default_partitions=params.partitions,
            session_timeout_s=params.session_timeout_s,
            max_bytes=params.max_bytes,
        )
    raise _reject("bus", url)


def open_blob_store(url: str, settings: Settings | None = None) -> BlobStore:
    settings = settings or Settings()
    if url.startswith("s3://"):
        from infra.blobs.s3 import S3BlobStore

        parts, query = urlsplit(url), _query(url)
        endpoint = query.get("endpoint")
        if not endpoint or not parts.netloc:
            raise UnsupportedURL(f"S3 blob URL {url!r} needs a bucket and ?endpoint=host:port")
        from infra.blobs.retrying import RetryingBlobStore

        store = S3BlobStore(
            endpoint,
            parts.netloc,
            access_key=settings.s3_access_key,
            secret_key=settings.s3_secret_key.get_secret_value(),
            secure=query.get("secure", "false").lower() == "true",
            region=settings.s3_region,
            connect_timeout_s=settings.connect_timeout_s,
        )
        return RetryingBlobStore(store, retry_for_s=settings.outage_retry_s)
    if url.startswith("file:"):
        from infra.blobs.filesystem import FileBlobStore

        return FileBlobStore(_file_path(url))
    raise _reject("blobs", url)


def open_registry(url: str, settings: Settings | None = None) -> Registry:
    settings = settings or Settings()
    if url.startswith(("http://", "https://")):
        from infra.registry.mlflow_registry import MlflowRegistry
        from infra.registry.retrying import RetryingRegistry

        return RetryingRegistry(
            MlflowRegistry(url, connect_timeout_s=settings.connect_timeout_s), retry_for_s=settings.outage_retry_s
        )
    if url.startswith("sqlite:///"):
        from infra.registry.mlflow_registry import MlflowRegistry

        db = _local_path(url, "sqlite")
        return MlflowRegistry(f"sqlite:///{db}", artifact_root=db.parent / "mlartifacts")
    raise _reject("registry", url)


@dataclass
class Ports:
    """Everything a service talks to, opened from one settings object."""

    bus: Bus
    blobs: BlobStore
    registry: Registry

    def close(self) -> None:
        self.bus.close()


def open_ports(settings: Settings) -> Ports:
    return Ports(
        bus=open_bus(settings.bus, settings),
        blobs=open_blob_store(settings.blobs, settings),
        registry=open_registry(settings.registry, settings),
    )
