"""The local stack: real Kafka, SeaweedFS S3 and MLflow servers on loopback, no Docker.

    stack = Stack(Settings().stack)
    stack.provision()          # jars, formatted Kafka log dir (cached)
    stack.up()                 # start what is not running, wait for real readiness
    stack.status()             # [ServiceStatus(name, state, pid, url, ...)]
    stack.down()               # stop exactly the processes started by up()

Layout under ``settings.dir`` (default ``.stack/``)::

    run/<service>.pid     JSON pid record (pid, start time, ownership token, argv)
    logs/<service>.log    stdout+stderr of each server
    kafka/ s3/ mlflow/    data and generated config
    cache/                Maven repo and Kafka jars (``settings.cache_dir``; may be shared)
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import psutil

from infra.config import StackSettings
from infra.stack import process
from infra.stack.base import Echo, Service, ServiceUnreachable, StackError
from infra.stack.kafka_broker import KafkaBroker
from infra.stack.mlflow_server import MlflowServer
from infra.stack.s3_store import SeaweedS3

SERVICE_ORDER: tuple[str, ...] = ("kafka", "s3", "mlflow")
SERVICE_TYPES: dict[str, type[Service]] = {"kafka": KafkaBroker, "s3": SeaweedS3, "mlflow": MlflowServer}

State = Literal["running", "stopped", "crashed"]


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    state: State
    pid: int | None
    url: str
    detail: str = ""
    rss_mb: float | None = None
    pids: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _print(msg: str) -> None:
    print(msg, flush=True)


class Stack:
    """Provision, start, inspect and stop the local servers described by ``settings``."""

    def __init__(self, settings: StackSettings | None = None, echo: Echo | None = None) -> None:
        self.settings = settings if settings is not None else StackSettings()
        self.echo: Echo = echo or _print
        self.services: dict[str, Service] = {n: SERVICE_TYPES[n](self.settings) for n in SERVICE_ORDER}
        self.root = self.settings.dir.expanduser().resolve()
        # Popen handles of servers started by this Stack object, so their exit status is reaped
        # (an unreaped child would linger as a zombie that still "has" its pid).
        self._children: dict[str, object] = {}

    # --- paths -----------------------------------------------------------------------------------
    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    def pid_path(self, service: str) -> Path:
        return self.run_dir / f"{service}.pid"

    def log_path(self, service: str) -> Path:
        return self.log_dir / f"{service}.log"

    # --- selection -------------------------------------------------------------------------------
    def resolve(self, services: Sequence[str] | None, *, with_requirements: bool = True) -> list[str]:
        """Validated service names in start order (``None`` = all), plus what they require."""
        if not services:
            return list(SERVICE_ORDER)
        unknown = [s for s in services if s not in SERVICE_TYPES]
        if unknown:
            raise StackError(f"unknown service(s) {', '.join(unknown)}; known: {', '.join(SERVICE_ORDER)}")
        wanted = set(services)
        if with_requirements:
            changed = True
            while changed:
                extra = {r for s in wanted for r in self.services[s].requires} - wanted
                wanted |= extra
                changed = bool(extra)
        return [s for s in SERVICE_ORDER if s in wanted]

    def _service(self, name: str) -> Service:
        try:
            return self.services[name]
        except KeyError:
            raise StackError(f"unknown service {name!r}; known: {', '.join(SERVICE_ORDER)}") from None

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialise up/down between processes sharing this stack dir."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with (self.run_dir / ".lock").open("w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _reap(self) -> None:
        for popen in self._children.values():
            popen.poll()  # type: ignore[attr-defined]

    # --- provision -------------------------------------------------------------------------------
    def provision(self, services: Sequence[str] | None = None) -> dict[str, float]:
        """Download/build/format what the services need; cached. Returns seconds spent per service."""
        with self._lock():
            return self._provision(self.resolve(services))

    def _provision(self, names: list[str]) -> dict[str, float]:
        timings: dict[str, float] = {}
        self.root.mkdir(parents=True, exist_ok=True)
        for name in names:
            started = time.monotonic()
            self.services[name].provision(self.echo)
            timings[name] = time.monotonic() - started
        return timings

    # --- up --------------------------------------------------------------------------------------
    def up(self, services: Sequence[str] | None = None) -> list[ServiceStatus]:
        """Start every requested service that is not already running and wait until each is ready.

        Idempotent: a running, ready service is left untouched (same pid). A service whose pid file
        points at a dead process is cleaned up and started again. Raises StackError (with the tail of
        the server's log) if a server exits or does not become ready within ``ready_timeout_s``.
        """
        names = self.resolve(services)
        with self._lock():
            self._provision(names)
            for name in names:
                self._up_one(name)
        return self.status(names)

    def _up_one(self, name: str) -> None:
        svc = self.services[name]
        pid_path = self.pid_path(name)
        record = process.PidRecord.load(pid_path)
        remnant = None
        if record is not None:
            if process.owned_leader(record) is not None:
                self._wait_ready(svc, record, None, self.settings.ready_timeout_s)
                self.echo(f"{name}: already running (pid {record.pid}) at {svc.listening()[0]}")
                return
            leftovers = process.terminate(record, self.settings.stop_grace_s)
            process.wait_ports_released(self.settings.host, svc.ports(), record, self.settings.stop_grace_s)
            remnant = process.exiting(record)
            if remnant is None:  # else kept, so the next up or down waits for that process again
                pid_path.unlink(missing_ok=True)
            note = f"; stopped leftover pids {leftovers}" if leftovers else ""
            self.echo(f"{name}: previous process {record.pid} is gone (crashed){note}; starting again")

        busy = [(p, who) for p in svc.ports() if (who := process.port_owner(self.settings.host, p))]
        if busy:
            desc = ", ".join(f"{self.settings.host}:{p} held by {who}" for p, who in busy)
            if remnant is not None:
                raise StackError(
                    f"{name}: cannot start, port(s) still held by its previous process {remnant.pid}: its leader "
                    f"thread has exited but other threads of it had not within {self.settings.stop_grace_s:.0f}s "
                    f"({desc}). See `ps -L -p {remnant.pid}`; the next up or down waits for it again."
                )
            raise StackError(
                f"{name}: cannot start, port(s) in use and not by this stack: {desc}. "
                f"Stop that process or choose other ports (FLYWHEEL_STACK_* settings)."
            )
        svc.prepare()
        started = time.monotonic()
        popen, record = process.spawn(
            name,
            svc.command(),
            log_path=self.log_path(name),
            pid_path=pid_path,
            env={**_base_env(), **svc.env()},
            cwd=svc.home,
        )
        self._children[name] = popen
        try:
            self._wait_ready(svc, record, popen, self.settings.ready_timeout_s)
            svc.after_ready(self.echo)
        except BaseException:
            process.terminate(record, self.settings.stop_grace_s)
            popen.poll()
            pid_path.unlink(missing_ok=True)
            raise
        self.echo(f"{name}: ready in {time.monotonic() - started:.1f}s (pid {record.pid})")
        for line in svc.listening():
            self.echo(f"  {name} listens at {line}")

    def _wait_ready(self, svc: Service, record: process.PidRecord, popen, timeout_s: float) -> None:  # noqa: ANN001
        deadline = time.monotonic() + timeout_s
        last: BaseException | None = None
        attempts = 0
        while True:
            exited = popen.poll() if popen is not None else None
            why = "" if exited is None else f"exited with code {exited}"
            if not why and popen is None:  # a child of ours that has not exited is alive and ours
                _proc, why = process.ownership(record)
            if why:
                raise StackError(
                    f"{svc.name} (pid {record.pid}) stopped before it became ready at {svc.url}: {why}.\n"
                    f"Last lines of {self.log_path(svc.name)}:\n{process.tail(self.log_path(svc.name), 40)}"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServiceUnreachable(
                    f"{svc.name} did not become ready at {svc.url} within {timeout_s:.0f}s "
                    f"({attempts} attempts; last error: {_short(last)}).\n"
                    f"Last lines of {self.log_path(svc.name)}:\n{process.tail(self.log_path(svc.name), 40)}"
                )
            attempts += 1
            try:
                svc.probe(min(5.0, max(1.0, remaining)))
                return
            except Exception as exc:  # noqa: BLE001 - any failure means "not ready yet"
                last = exc
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))

    # --- checks ----------------------------------------------------------------------------------
    def check(self, service: str, timeout_s: float = 5.0) -> None:
        """Raise ServiceUnreachable (naming the URL) unless ``service`` answers within ``timeout_s``.

        Works whether or not this stack started the server: it only talks to the configured address.
        """
        svc = self._service(service)
        deadline = time.monotonic() + timeout_s
        last: BaseException | None = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServiceUnreachable(
                    f"{service} is not reachable at {svc.url} (waited {timeout_s:.1f}s; last error: {_short(last)})"
                )
            try:
                svc.probe(max(0.2, min(remaining, 5.0)))
                return
            except Exception as exc:  # noqa: BLE001
                last = exc
            time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))

    # --- status ----------------------------------------------------------------------------------
    def status(self, services: Sequence[str] | None = None, probe_timeout_s: float = 3.0) -> list[ServiceStatus]:
        """running = our process is alive and answers; crashed = pid file present but the process is
        gone or does not answer; stopped = no pid file."""
        self._reap()
        out: list[ServiceStatus] = []
        for name in self.resolve(services, with_requirements=False):
            svc = self.services[name]
            record = process.PidRecord.load(self.pid_path(name))
            if record is None:
                out.append(ServiceStatus(name, "stopped", None, svc.url))
                continue
            leader, why = process.ownership(record)
            if leader is None:
                out.append(ServiceStatus(name, "crashed", record.pid, svc.url, why))
                continue
            procs = process.owned_processes(record)
            rss = _rss_mb(procs)
            pids = sorted(p.pid for p in procs)
            try:
                self.check(name, probe_timeout_s)
            except ServiceUnreachable as exc:
                out.append(ServiceStatus(name, "crashed", record.pid, svc.url, f"not answering: {exc}", rss, pids))
                continue
            out.append(ServiceStatus(name, "running", record.pid, svc.url, "", rss, pids))
        return out

    # --- down ------------------------------------------------------------------------------------
    def down(self, services: Sequence[str] | None = None) -> list[str]:
        """Stop the processes this stack started (pid files; SIGTERM, SIGKILL after the grace period).

        Only processes whose pid, start time and ownership token match the pid file are signalled.
        Returns the names of the services that had processes to stop.
        """
        self._reap()
        stopped: list[str] = []
        names = self.resolve(services, with_requirements=False)
        with self._lock():
            for name in reversed(names):
                path = self.pid_path(name)
                record = process.PidRecord.load(path)
                if record is None:
                    continue
                pids = process.terminate(record, self.settings.stop_grace_s)
                self._reap()
                if (remnant := process.exiting(record)) is not None:
                    # Kept, so the next up or down waits for it again instead of finding its ports taken.
                    self.echo(f"{name}: process {remnant.pid} has not finished exiting; kept its pid file")
                else:
                    path.unlink(missing_ok=True)
                if pids:
                    stopped.append(name)
                    self.echo(f"{name}: stopped (pids {', '.join(map(str, sorted(pids)))})")
                else:
                    self.echo(f"{name}: was not running (removed stale pid file)")
        return stopped

    # --- logs ------------------------------------------------------------------------------------
    def logs(self, service: str, lines: int = 50) -> str:
        """The last ``lines`` lines of ``.stack/logs/<service>.log``."""
        self._service(service)
        return process.tail(self.log_path(service), lines)

    # --- client configuration --------------------------------------------------------------------
    def client_env(self) -> dict[str, str]:
        """Environment variables that point flywheel processes (and plain clients) at this stack."""
        s = self.settings
        s3 = self.services["s3"]
        blobs_bucket = s.buckets[0]
        return {
            "FLYWHEEL_BUS": f"kafka://{s.host}:{s.kafka_port}",
            "FLYWHEEL_BLOBS": f"s3://{blobs_bucket}?endpoint={s.host}:{s.s3_port}",
            "FLYWHEEL_REGISTRY": self.services["mlflow"].url,
            "FLYWHEEL_S3_ACCESS_KEY": s.s3_access_key,
            "FLYWHEEL_S3_SECRET_KEY": s.s3_secret_key.get_secret_value(),
            "MLFLOW_TRACKING_URI": self.services["mlflow"].url,
            "KAFKA_BOOTSTRAP_SERVERS": f"{s.host}:{s.kafka_port}",
            "S3_ENDPOINT_URL": s3.url,
            "AWS_ACCESS_KEY_ID": s.s3_access_key,
            "AWS_SECRET_ACCESS_KEY": s.s3_secret_key.get_secret_value(),
            "AWS_DEFAULT_REGION": "us-east-1",
        }


def _base_env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    # Never let the servers inherit a client-side config that points somewhere else.
    for key in ("MLFLOW_TRACKING_URI", "MLFLOW_S3_ENDPOINT_URL", "KAFKA_HEAP_OPTS", "JAVA_TOOL_OPTIONS"):
        env.pop(key, None)
    return env


def _rss_mb(procs: list[psutil.Process]) -> float | None:
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return round(total / 2**20, 1) if procs else None


def _short(exc: BaseException | None) -> str:
    if exc is None:
        return "none"
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= 300 else text[:297] + "..."
