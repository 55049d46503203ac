"""A registered planner version is servable as MLflow promises: ``mlflow models serve -m models:/<name>/<version>``
(the venv's own CLI, ``--env-manager local``) answers a chat POSTed to ``/invocations`` with the model's reply.

The version is built by our code (a tiny checkpoint registered by ``register_checkpoint``) in the embedded
registry; the server process and its uvicorn worker are killed (their whole process group) however the test ends.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from stack_support import free_port

from bus_schemas.blob_ref import BlobRef
from infra.bootstrap import open_blob_store, open_registry
from learner.model import TinyModelConfig, build_tiny_model, save_checkpoint, train_tokenizer
from learner.registry import Lineage, register_checkpoint

pytestmark = pytest.mark.e2e  # a model server start and two answers: 45-60 s on two busy cores; no stack needed

MLFLOW = Path(sys.executable).with_name("mlflow")
READY_TIMEOUT_S = 240.0


def tiny_checkpoint(path: Path) -> Path:
    tokenizer = train_tokenizer(['<action>{"kind": "finish"}</action> hello world'] * 20, vocab_size=300)
    return save_checkpoint(build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32)), tokenizer, path)


def lineage(name: str, manifest: BlobRef) -> Lineage:
    return Lineage(
        model_name=name,
        algorithm="sft",
        dataset_digest="sha256:" + "ab" * 32,
        dataset_manifest=manifest,
        source_offsets={"episodes/0": 1},
        harness_version="tiny-planner/1",
        parent_version=None,
    )


def post(url: str, body: dict, timeout_s: float = 120.0) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.loads(response.read())


def wait_ready(server: subprocess.Popen, base: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"mlflow models serve exited with {server.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{base}/ping", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    pytest.fail(f"mlflow models serve not ready after {READY_TIMEOUT_S:.0f}s:\n{log.read_text()[-4000:]}")


def stop(server: subprocess.Popen) -> None:
    """SIGTERM to the server's process group (the CLI and its uvicorn worker), SIGKILL after 15 s."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(server.pid, signal.SIGKILL)  # any worker left behind
    except ProcessLookupError:
        pass
    server.wait(timeout=15)
    deadline = time.monotonic() + 15
    while group_members(server.pid) and time.monotonic() < deadline:
        time.sleep(0.2)


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, from /proc (a killed worker's zombie waits for init)."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":  # fields after the command: state, ppid, pgrp
            live.append(int(stat.parent.name))
    return live


def test_mlflow_models_serve_answers_a_chat_with_a_registered_version(tmp_path):
    registry_url = f"sqlite:///{tmp_path}/mlflow.db"
    registry = open_registry(registry_url)
    blobs = open_blob_store(f"file:///{tmp_path}/blobs")
    name = f"planner-{uuid.uuid4().hex[:8]}"
    version, _ = register_checkpoint(
        registry,
        blobs,
        tiny_checkpoint(tmp_path / "ckpt"),
        lineage(name, blobs.put(b"{}", "application/json")),
        run_id="run-serve",
    )

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "MLFLOW_TRACKING_URI": registry_url, "MLFLOW_REGISTRY_URI": registry_url}
    env["PATH"] = f"{MLFLOW.parent}{os.pathsep}{env.get('PATH', '')}"  # the CLI execs `uvicorn` found on PATH
    command = [str(MLFLOW), "models", "serve", "-m", f"models:/{name}/{version.version}", "--env-manager", "local"]
    command += ["-h", "127.0.0.1", "-p", str(port), "-w", "1"]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        wait_ready(server, base, log)
        chat = [{"role": "system", "content": "You operate a phone."}, {"role": "user", "content": "Set an alarm."}]
        answer = post(
            f"{base}/invocations",
            {"dataframe_split": {"columns": ["messages"], "data": [[json.dumps(chat)], [json.dumps(chat[:1])]]}},
        )
        records = post(f"{base}/invocations", {"dataframe_records": [{"messages": json.dumps(chat)}]})
    finally:
        stop(server)
    replies = answer["predictions"]
    assert len(replies) == 2 and all(isinstance(r, str) for r in replies), answer
    assert records["predictions"] == replies[:1]  # greedy decoding: the same chat gets the same reply either way
    assert not group_members(server.pid), "mlflow models serve left processes behind"
