"""The command line of each OpenAI-compatible engine, and whether it can run here.

Both serve a version under its registry label (``planner/4``), the model name the rollout workers' inference port
sends, so a request can only be answered by the weights it names:

- ``transformers serve`` (CPU; ships with transformers) loads the model a request names, on demand. It is started
  once in the cache root, where every version lies at ``<name>/<version>``: a request for ``planner/4`` loads
  ``./planner/4``. A promoted version is served by the same process (no restart, no gap): the follower downloads it
  and loads it with a first request before announcing it.
- ``vllm serve`` (GPU) serves one checkpoint per process, under ``--served-model-name``: a promoted version restarts
  it on the same port.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Engine = Literal["transformers", "vllm"]
ENGINES: tuple[Engine, ...] = ("transformers", "vllm")


class EngineUnavailable(RuntimeError):
    """The engine cannot start on this machine; the message says what to install or use instead."""


@dataclass(frozen=True)
class EngineCommand:
    """What to run (``argv`` in ``cwd``) to serve ``served_name`` from ``checkpoint``."""

    argv: tuple[str, ...]
    cwd: Path
    reloads_in_place: bool
    """True: the running process serves a new version by name (transformers); False: restart it (vLLM)."""
    env: tuple[tuple[str, str], ...] = ()
    """Variables set for the engine on top of ours."""


def transformers_command(
    cache_root: Path, host: str, port: int, *, device: str = "cpu", threads: int | None = None
) -> EngineCommand:
    """``transformers serve`` in ``cache_root`` (no model pinned: each request loads ``<name>/<version>`` there);
    ``threads`` caps torch's CPU threads (OMP_NUM_THREADS), as the in-process policy decodes on one."""
    argv = (_transformers_cli(), "serve", "--host", host, "--port", str(port), "--device", device)
    env = (("OMP_NUM_THREADS", str(threads)),) if threads is not None else ()
    return EngineCommand((*argv, "--log-level", "warning"), cache_root, reloads_in_place=True, env=env)


def vllm_command(
    checkpoint: Path, served_name: str, host: str, port: int, *, native_tools: bool = True
) -> EngineCommand:
    """``vllm serve <checkpoint>`` named ``served_name``; with Hermes tool-call parsing for the ``tools`` field."""
    argv = [_vllm_cli(), "serve", str(checkpoint), "--host", host, "--port", str(port)]
    argv += ["--served-model-name", served_name]
    if native_tools:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    return EngineCommand(tuple(argv), checkpoint.parent, reloads_in_place=False)


def check_engine(engine: Engine) -> None:
    """Fail now, with the fix, when ``engine`` cannot run here."""
    if engine == "transformers":
        from transformers.utils.import_utils import is_serve_available

        if not is_serve_available():
            raise EngineUnavailable(
                "engine transformers: `transformers serve` needs fastapi, uvicorn and openai "
                "(pip install 'transformers[serving]'; `make install` has them)"
            )
        return
    if importlib.util.find_spec("vllm") is None and shutil.which("vllm") is None:
        raise EngineUnavailable(
            "engine vllm: the vllm package is not installed (install the 'gpu' extra on a CUDA machine); "
            "use --engine transformers on a CPU machine"
        )


def _transformers_cli() -> str:
    return shutil.which("transformers", path=str(Path(sys.executable).parent)) or "transformers"


def _vllm_cli() -> str:
    return shutil.which("vllm", path=str(Path(sys.executable).parent)) or "vllm"
