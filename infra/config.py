"""One settings object for every process: adapter URLs, stack ports and credentials.

Values come, in order of precedence, from explicit arguments (CLI flags), environment variables
(prefix ``FLYWHEEL_``), a TOML file (``flywheel.toml`` in the working directory, or the file named by
``FLYWHEEL_CONFIG``) and the defaults below (the embedded adapters under ``./.flywheel/``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from harness_service.policy.inference import DEFAULT_INFERENCE, Inference, parse_inference


class ConfigError(ValueError):
    """The configuration cannot be used: a config file that is missing, malformed or holds a mistyped value."""


_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s'\"]+)@")


def mask_credentials(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@host`` URL in it replaced by ``***`` (a
    user-only ``scheme://token@host`` is masked whole). Every URL the platform prints or logs goes through this."""

    def masked(match: re.Match[str]) -> str:
        user, colon, _ = match["userinfo"].partition(":")
        return f"{match['scheme']}{user}:***@" if colon else f"{match['scheme']}***@"

    return _USERINFO.sub(masked, text)


def _config_file() -> Path:
    """``flywheel.toml`` in the working directory (optional), or the file ``FLYWHEEL_CONFIG`` names (required)."""
    named = os.environ.get("FLYWHEEL_CONFIG")
    if named is None:
        return Path("flywheel.toml")
    if not Path(named).is_file():
        raise ConfigError(
            f"FLYWHEEL_CONFIG names {named!r}, which is not a file; fix the path or unset FLYWHEEL_CONFIG"
        )
    return Path(named)


class StackSettings(BaseSettings):
    """Where the local stack (``flywheel stack up``) keeps its files and which loopback ports it binds.

    Ports stay below Linux's ephemeral range (``net.ipv4.ip_local_port_range``, 32768-60999 by default): a
    listening port inside it can be taken by any outgoing connection's source port, even by a client
    reconnecting to that very port while the server is down (a TCP self-connect), and the server then cannot
    come back. The S3 store also binds ``s3_port``+1..+8 and ``s3_port``+10008 (see ``infra.stack.s3_store``).
    """

    model_config = SettingsConfigDict(env_prefix="FLYWHEEL_STACK_", extra="forbid")

    dir: Path = Path(".stack")
    host: str = "127.0.0.1"
    kafka_port: int = 19092
    kafka_controller_port: int = 19093
    kafka_version: str = "4.3.1"
    kafka_heap: str = "768m"
    kafka_jvm_opts: str = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    """Extra JVM flags of the broker (and of its storage formatting). The default suits a single-node dev broker on a
    few cores: the C1 compiler only and the serial collector start it with about half the CPU (3.8 s instead of 7.3 s)
    and keep its work in one thread; set ``FLYWHEEL_STACK_KAFKA_JVM_OPTS=""`` for the JVM's own defaults (C2, G1)."""
    s3_port: int = 18333
    mlflow_port: int = 15000
    s3_access_key: str = "flywheel"
    s3_secret_key: SecretStr = SecretStr("flywheel-local-secret")
    buckets: list[str] = Field(default_factory=lambda: ["flywheel-blobs", "flywheel-mlflow"])
    ready_timeout_s: float = 120.0
    # Downloads and builds (Maven repo, Kafka jars), shared between stacks; None = ``<dir>/cache``.
    cache_dir: Path | None = None
    # Seconds between SIGTERM and SIGKILL when ``flywheel stack down`` stops a service.
    stop_grace_s: float = 20.0

    @property
    def cache_path(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else self.dir / "cache"

    @property
    def kafka_url(self) -> str:
        return f"kafka://{self.host}:{self.kafka_port}"

    @property
    def s3_endpoint(self) -> str:
        return f"{self.host}:{self.s3_port}"

    @property
    def mlflow_url(self) -> str:
        return f"http://{self.host}:{self.mlflow_port}"


class Settings(BaseSettings):
    """Adapter selection by URL. Defaults are the embedded adapters: no server needed."""

    model_config = SettingsConfigDict(env_prefix="FLYWHEEL_", extra="ignore", env_nested_delimiter="__")

    bus: str = "sqlite:///.flywheel/bus.db"
    blobs: str = "file:.flywheel/blobs"
    registry: str = "sqlite:///.flywheel/mlflow.db"
    # How a model version becomes a policy (harness_service.policy.inference): local: | openai+http(s)://... | vllm:
    inference: str = DEFAULT_INFERENCE
    # The key sent to an openai+http(s) server (FLYWHEEL_INFERENCE_API_KEY); OPENAI_API_KEY when unset.
    inference_api_key: SecretStr | None = None
    # Credentials for s3:// blob URLs; the endpoint is taken from the URL query (?endpoint=host:port).
    s3_access_key: str = "flywheel"
    s3_secret_key: SecretStr = SecretStr("flywheel-local-secret")
    s3_region: str = "us-east-1"
    # How long a client waits for a server before failing with an error naming its URL.
    connect_timeout_s: float = 10.0
    # How long writers wait out an S3 store or MLflow outage (retrying with backoff) before failing.
    outage_retry_s: float = 120.0
    # Events larger than this are rejected by the codec; put large payloads in the blob store.
    max_inline_payload_bytes: int = 64 * 1024
    stack: StackSettings = Field(default_factory=StackSettings)

    @field_validator("inference")
    @classmethod
    def _known_inference(cls, url: str) -> str:
        parse_inference(url)  # an unknown scheme or parameter fails at load, naming the supported ones
        return url

    def inference_port(self) -> Inference:
        """The parsed ``inference`` URL with its API key (``inference_api_key``, else ``OPENAI_API_KEY``)."""
        key = self.inference_api_key or (
            SecretStr(os.environ["OPENAI_API_KEY"]) if os.environ.get("OPENAI_API_KEY") else None
        )
        return parse_inference(self.inference, api_key=key)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        path = _config_file()
        try:
            toml = TomlConfigSettingsSource(settings_cls, toml_file=path)
        except ValueError as exc:  # tomllib.TOMLDecodeError; also a file that is not UTF-8
            raise ConfigError(f"{path} is not valid TOML: {exc}; fix the file") from None
        return (init_settings, env_settings, toml, file_secret_settings)


def load_settings(**overrides: Any) -> Settings:
    """Settings with CLI-flag overrides applied (``None`` values are ignored)."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_input=False, include_url=False)
        )
        raise ConfigError(
            f"invalid settings ({problems}) from flags, FLYWHEEL_* variables or {_config_file()}; fix the value"
        ) from None
