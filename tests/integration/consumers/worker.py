"""Child process of the crash test: run a consumer; with ``crash``, SIGKILL itself after handling, before the commit."""

import os
import signal
import sys
from pathlib import Path

from consumers.registry import build
from infra.bootstrap import Ports, open_blob_store, open_bus
from infra.cli.consume import LazyRegistry
from infra.config import load_settings
from infra.runtime import ConsumerRunner

name, bus, blobs, registry, state_dir, mode = sys.argv[1:7]
settings = load_settings(bus=bus, blobs=blobs, registry=registry)
ports = Ports(open_bus(bus), open_blob_store(blobs), LazyRegistry(settings))
runner = ConsumerRunner(build(name), ports, state_dir=Path(state_dir))
if mode == "crash":
    def die(outputs, consumed):  # the handler ran and its outputs are ready: die before they are durable
        print(f"handled {runner.stats.handled}, dying before commit", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    runner.consumer.publish_and_commit = die
runner.run(idle_exit_s=float(os.environ.get("IDLE_EXIT_S", "4")))
print(f"stats {runner.stats}", flush=True)
