"""One engine server as a child process: started, waited for until it answers, asked to load a model, stopped."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import IO

import httpx
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from infra.serving.engines import EngineCommand

log = logging.getLogger("flywheel.serve")


class EngineFailed(RuntimeError):
    """The engine exited, or did not answer within its start timeout; the message ends with its log's tail."""


class _NotReady(Exception):
    pass


class EngineProcess:
    """``command`` run in its own session (a Ctrl-C in the shell reaches us, and we stop it), output to ``log_file``."""

    def __init__(self, command: EngineCommand, base_url: str, log_file: Path) -> None:
        self.command = command
        self.base_url = base_url.rstrip("/")
        self.log_file = log_file
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def root(self) -> str:
        """The server's root URL (``/health`` lives there; the OpenAI API under ``/v1``)."""
        return self.base_url.removesuffix("/v1")

    def start(self, timeout_s: float = 120.0) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_file.open("ab")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1", **dict(self.command.env)}
        log.info("starting %s (in %s)", " ".join(self.command.argv), self.command.cwd)
        self._process = subprocess.Popen(  # noqa: S603 (our own argv)
            self.command.argv,
            cwd=self.command.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait(f"{self.root}/health", timeout_s)

    def load(self, served_name: str, timeout_s: float = 120.0) -> None:
        """Ask for one token of ``served_name``: the engine loads it now, not on a rollout's first request."""
        body = {"model": served_name, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
        try:
            response = httpx.post(f"{self.base_url}/chat/completions", json=body, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise EngineFailed(f"{served_name}: {type(exc).__name__}: {exc}{self._tail()}") from exc
        if response.status_code != httpx.codes.OK:
            raise EngineFailed(f"{served_name}: HTTP {response.status_code}: {response.text[:500]}{self._tail()}")

    def _wait(self, url: str, timeout_s: float) -> None:
        def ready() -> None:
            if self._process is not None and self._process.poll() is not None:
                raise EngineFailed(f"the engine exited with {self._process.returncode}{self._tail()}")
            try:
                if httpx.get(url, timeout=2.0).status_code == httpx.codes.OK:
                    return
            except httpx.HTTPError:
                pass
            raise _NotReady

        try:
            for attempt in Retrying(
                retry=retry_if_exception_type(_NotReady), stop=stop_after_delay(timeout_s), wait=wait_fixed(0.25)
            ):
                with attempt:
                    ready()
        except _NotReady:
            self.stop()
            raise EngineFailed(f"{url} did not answer within {timeout_s:.0f} s{self._tail()}") from None
        except Exception:
            self.stop()
            raise

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM to its session, SIGKILL after ``grace_s``; returns once it has exited."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def _tail(self, lines: int = 15) -> str:
        try:
            text = self.log_file.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\n" + "\n".join(text) if text else ""


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)  # start_new_session made it a group leader: its own children go too
    except ProcessLookupError:
        pass


def wait_port_free(host: str, port: int, timeout_s: float = 10.0) -> None:
    """After a restart: the old server's socket must be gone before the new one binds the port."""
    import socket

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
                return
            except OSError:
                time.sleep(0.1)
