"""Child process of the crash test: run a consumer as `flywheel consume` does (FastStream on Kafka, the port
runner on the embedded log); with ``crash``, SIGKILL itself after handling, before the commit; with ``pause``,
SIGSTOP itself once at that point (a zombie, for the fencing test); with ``lost_ack`` (FastStream on Kafka), the
first transaction commits but the consumer is told it failed."""

import inspect
import logging
import os
import signal
import sys
from pathlib import Path

from infra.cli.consume import build_worker, open_worker_ports

name, bus, blobs, registry, state_dir, mode = sys.argv[1:7]
logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")  # on stderr, as flywheel consume
settings, ports = open_worker_ports({"bus": bus, "blobs": blobs, "registry": registry})
worker = build_worker(name, settings, ports, Path(state_dir), float(os.environ.get("IDLE_EXIT_S", "4")))
print(f"worker {type(worker).__name__}", flush=True)
if mode == "crash":

    def die(*outputs_and_consumed):  # the handler ran and its outputs are ready: die before they are durable
        print(f"handled {worker.stats.handled}, dying before commit", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    committer = getattr(worker, "runner", None)
    if committer is not None:
        committer.consumer.publish_and_commit = die
    else:
        worker.publish_and_commit = die
if mode == "pause":  # a zombie: stop itself (SIGSTOP) once, with a batch handled but not yet committed
    committer = getattr(worker, "runner", None)
    target = committer.consumer if committer is not None else worker
    original = target.publish_and_commit
    paused: list[bool] = []

    def pause_once() -> None:
        if not paused:
            paused.append(True)
            print(f"handled {worker.stats.handled}, pausing before commit", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)

    if inspect.iscoroutinefunction(original):

        async def paused_commit(*args):
            pause_once()
            return await original(*args)
    else:

        def paused_commit(*args):
            pause_once()
            return original(*args)

    target.publish_and_commit = paused_commit
if mode == "lost_ack":  # the first transaction commits on the broker, but its answer never reaches the consumer
    original_commit = worker.publish_and_commit
    lost: list[bool] = []

    async def commit_then_lose_the_answer(*args):
        result = await original_commit(*args)
        if not lost:
            lost.append(True)
            print(f"handled {worker.stats.handled}, committed, answer lost", flush=True)
            raise ConnectionResetError("injected: the broker committed the transaction, its answer was lost")
        return result

    worker.publish_and_commit = commit_then_lose_the_answer
worker.run()
print(f"stats {worker.stats}", flush=True)
ports.close()
