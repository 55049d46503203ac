"""The in-process loop's other rollout workers: OS processes of group ``flywheel.rollout-worker`` beside the one the
loop steps itself, so episodes decode on every core (``LoopConfig.rollout_workers``)."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from multiprocessing.process import BaseProcess
from pathlib import Path

from infra.cli.consume_rollout import WorkerOptions, run_rollout_worker
from infra.loop.died import raise_if_exited


def _serve(name: str, options: WorkerOptions, log: Path) -> None:
    """A worker process whose console lines go to ``log`` rather than the run's live view, and which gets SIGTERM
    (finish the request, exit) when the run's process dies, even by SIGKILL (Linux's parent-death signal)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    run_rollout_worker(name, options)


class PeerRolloutWorkers:
    """``count`` rollout workers named ``rollout-worker-1`` ... (the loop's own is ``rollout-worker-0``), each
    its own ``spawn``ed process on the run's bus, blob store and registry, sharing the run's checkpoint cache; each
    one's output in ``<log_dir>/<name>.log``. A request runs on whichever member owns its partition; its episodes
    do not depend on which (their seeds are in the request)."""

    def __init__(self, count: int, urls: dict[str, str], state_dir: Path, log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        options = WorkerOptions(overrides=dict(urls), state_dir=state_dir)
        ctx = multiprocessing.get_context("spawn")
        self.logs = {f"rollout-worker-{i}": log_dir / f"rollout-worker-{i}.log" for i in range(1, count + 1)}
        self.procs: dict[str, BaseProcess] = {
            name: ctx.Process(target=_serve, args=(name, options, log), name=name, daemon=True)
            for name, log in self.logs.items()
        }
        for proc in self.procs.values():
            proc.start()

    def check(self) -> None:
        """Raise ``ConsumerDied`` when a worker process has exited."""
        for name, proc in self.procs.items():
            raise_if_exited(name, proc.exitcode, self.logs[name])

    def close(self, timeout_s: float = 30.0) -> None:
        """SIGTERM: each finishes the request it runs and exits; one that does not within ``timeout_s`` is killed."""
        for proc in self.procs.values():
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs.values():
            proc.join(timeout_s)
            if proc.is_alive():
                proc.kill()
                proc.join()
