"""Start, identify and stop the stack's server processes.

Every process the stack starts:
- runs in its own session (``start_new_session=True``), so a Ctrl+C in the shell that ran ``up`` does
  not reach it and it outlives that shell;
- writes stdout and stderr to ``<stack>/logs/<service>.log``;
- carries an ownership token in its environment (``FLYWHEEL_STACK_TOKEN``), inherited by every child it
  forks (MLflow's uvicorn worker, for instance);
- is recorded in ``<stack>/run/<service>.pid`` (JSON: pid, create_time, token, command).

A process counts as ours only when its pid, its start time *and* its token match the pid file, so a
pid that the OS has since reused for an unrelated process is never signalled.

A zombie is not always done with its files. Linux shows a multithreaded process (every Go or Java server) as a
zombie as soon as its leader thread has exited, while its other threads are still running or finishing their own
exit; the process's files - its listening sockets included - are closed only when the last thread is gone, and
until then nothing in /proc names it as the sockets' owner. ``terminate`` therefore waits for that (bounded) and
kills such a remnant if it is still running, so its ports are free when it returns; ``wait_ports_released``
then waits (bounded) for any socket of it that the kernel is still closing, before a port counts as taken.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

TOKEN_ENV = "FLYWHEEL_STACK_TOKEN"


@dataclass(frozen=True)
class PidRecord:
    service: str
    pid: int
    create_time: float
    token: str
    command: list[str]
    started_at: float
    # Start time in clock ticks since boot (/proc/<pid>/stat field 22). Unlike create_time it does not
    # move when the wall clock is stepped (NTP, VM resume), so it is the primary pid-reuse check.
    start_ticks: int | None = None

    def dump(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> PidRecord | None:
        try:
            data = json.loads(path.read_text())
            return cls(**data)
        except FileNotFoundError:
            return None
        except (ValueError, TypeError):
            # A torn or foreign file: treat as stale.
            return None


def start_ticks(pid: int) -> int | None:
    """Process start time in clock ticks since boot (Linux), or None where /proc is unavailable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        return int(data[data.rindex(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _same_start(pid: int, proc: psutil.Process, record: PidRecord) -> tuple[bool, str]:
    if record.start_ticks is not None:
        ticks = start_ticks(pid)
        if ticks is not None:
            return ticks == record.start_ticks, f"start tick {ticks}, ours {record.start_ticks}"
    ct = proc.create_time()
    return abs(ct - record.create_time) <= 2.0, f"started {ct:.2f}, ours {record.create_time:.2f}"


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _has_token(proc: psutil.Process, token: str) -> bool:
    try:
        return proc.environ().get(TOKEN_ENV) == token
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
        return False


def ownership(record: PidRecord) -> tuple[psutil.Process | None, str]:
    """(process, "") if ``record``'s process is alive and ours, else (None, why not)."""
    try:
        proc = psutil.Process(record.pid)
        same, detail = _same_start(record.pid, proc, record)
    except psutil.NoSuchProcess:
        return None, f"no process with pid {record.pid}"
    except psutil.AccessDenied:
        return None, f"pid {record.pid} belongs to another user"
    if not same:
        return None, f"pid {record.pid} was reused by another process ({detail})"
    if not _alive(proc):
        return None, f"process {record.pid} has exited"
    try:
        token = proc.environ().get(TOKEN_ENV)
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None, f"process {record.pid} has exited"
    except (psutil.AccessDenied, OSError):
        # Cannot read its environment: fall back to pid + start time + argv.
        try:
            same = proc.cmdline()[: len(record.command)] == record.command
        except psutil.Error:
            same = False
        return (proc, "") if same else (None, f"pid {record.pid} does not run our command")
    if token != record.token:
        return None, f"pid {record.pid} is not ours (ownership token differs)"
    return proc, ""


def owned_leader(record: PidRecord) -> psutil.Process | None:
    """The process recorded in ``record`` if it is still alive and still ours, else None."""
    return ownership(record)[0]


def owned_processes(record: PidRecord) -> list[psutil.Process]:
    """Every live process carrying ``record``'s token: the leader and anything it forked."""
    found: dict[int, psutil.Process] = {}
    leader = owned_leader(record)
    if leader is not None:
        found[leader.pid] = leader
        try:
            for child in leader.children(recursive=True):
                if _has_token(child, record.token) and _alive(child):
                    found[child.pid] = child
        except psutil.NoSuchProcess:
            pass
    # Orphans whose leader already died (e.g. the leader was SIGKILLed): find them by token. Only
    # processes started after the leader can be its descendants.
    for proc in psutil.process_iter(["create_time"]):
        if proc.pid in found:
            continue
        if record.start_ticks is not None and (ticks := start_ticks(proc.pid)) is not None:
            if ticks < record.start_ticks:
                continue
        else:
            ct = proc.info.get("create_time")
            if ct is None or ct + 2.0 < record.create_time:
                continue
        if _has_token(proc, record.token) and _alive(proc):
            found[proc.pid] = proc
    return list(found.values())


def _recorded_process(record: PidRecord) -> psutil.Process | None:
    """The process at ``record.pid`` if it is the one started for ``record`` (same start), in whatever state."""
    try:
        proc = psutil.Process(record.pid)
        same, _detail = _same_start(record.pid, proc, record)
    except psutil.Error:
        return None
    return proc if same else None


def _other_threads(pid: int) -> list[int]:
    """Ids of process ``pid``'s threads besides its leader thread (Linux /proc; [] elsewhere or once none is left)."""
    try:
        return [tid for name in os.listdir(f"/proc/{pid}/task") if (tid := int(name)) != pid]
    except (OSError, ValueError):
        return []


def _thread_has_token(pid: int, tid: int, token: str) -> bool:
    """Whether thread ``tid`` of ``pid`` still runs with our token (its environment; a zombie leader has none)."""
    try:
        environ = Path(f"/proc/{pid}/task/{tid}/environ").read_bytes()
    except OSError:
        return False
    return f"{TOKEN_ENV}={token}".encode() in environ.split(b"\0")


def _holds_files(proc: psutil.Process) -> bool:
    """Whether ``proc`` may still have files (sockets) open: it runs, or it is a zombie only by its leader thread
    and other threads of it are still there (see the module docstring)."""
    try:
        if not proc.is_running():
            return False
        if proc.status() != psutil.STATUS_ZOMBIE:
            return True
    except psutil.Error:  # gone, or not ours to wait for
        return False
    return bool(_other_threads(proc.pid))


def exiting(record: PidRecord) -> psutil.Process | None:
    """``record``'s process if its leader has exited but the process still holds its files (threads left)."""
    proc = _recorded_process(record)
    if proc is None or _alive(proc) or not _holds_files(proc):
        return None
    return proc


def spawn(
    service: str,
    command: Sequence[str],
    *,
    log_path: Path,
    pid_path: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[subprocess.Popen[bytes], PidRecord]:
    """Start ``command`` in a new session, logging to ``log_path``, and write its pid file."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    full_env = dict(os.environ if env is None else env)
    full_env[TOKEN_ENV] = token
    with log_path.open("ab") as log:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        log.write(f"\n===== {stamp} flywheel stack: starting {service}: {' '.join(command)}\n".encode())
        log.flush()
        popen = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=str(cwd) if cwd else None,
            start_new_session=True,
            close_fds=True,
        )
    try:
        create_time = psutil.Process(popen.pid).create_time()
    except psutil.NoSuchProcess:  # died instantly; the readiness check reports the log
        create_time = time.time()
    record = PidRecord(
        service=service,
        pid=popen.pid,
        create_time=create_time,
        token=token,
        command=list(command),
        started_at=time.time(),
        start_ticks=start_ticks(popen.pid),
    )
    record.dump(pid_path)
    return popen, record


def terminate(record: PidRecord, grace_s: float) -> list[int]:
    """SIGTERM every process of ``record``, SIGKILL what is left after ``grace_s``. Returns the pids signalled.

    When it returns, none of them holds a file any more, as far as ``grace_s`` allows: a process whose leader
    thread has exited (a zombie to every other check here) is waited for until its last thread is gone, and
    killed first if a thread of it still runs with our token.
    """
    procs = owned_processes(record)
    remnant = exiting(record)
    watched = [*procs, remnant] if remnant is not None else procs
    killed = [remnant.pid] if remnant is not None and _kill_headless(remnant, record.token) else []
    pids = _terminate(record, procs, grace_s)
    killed += [p.pid for p in procs if _kill_headless(p, record.token)]
    deadline = time.monotonic() + grace_s
    waiting = [p for p in watched if _holds_files(p)]
    while waiting and time.monotonic() < deadline:
        time.sleep(0.02)
        waiting = [p for p in waiting if _holds_files(p)]
    return pids + [pid for pid in killed if pid not in pids]


def _kill_headless(proc: psutil.Process, token: str) -> bool:
    """SIGKILL ``proc`` if its leader thread has exited but a thread of it still runs with ``token``.

    Nothing is left to ask for a clean shutdown, and such a remnant can run on for ever (a thread that never
    returns), holding the service's ports."""
    try:
        if proc.status() != psutil.STATUS_ZOMBIE:
            return False
    except psutil.Error:
        return False
    if not any(_thread_has_token(proc.pid, tid, token) for tid in _other_threads(proc.pid)):
        return False
    try:
        proc.send_signal(signal.SIGKILL)
    except psutil.Error:
        return False
    return True


def _terminate(record: PidRecord, procs: list[psutil.Process], grace_s: float) -> list[int]:
    if not procs:
        return []
    for proc in procs:
        try:
            proc.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _gone, alive = psutil.wait_procs(procs, timeout=grace_s)
    alive = [p for p in alive if _alive(p)]
    for proc in alive:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    if alive:
        psutil.wait_procs(alive, timeout=5)
    # Anything forked between the scan and the signals.
    for proc in owned_processes(record):
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    return [p.pid for p in procs]


def port_owner(host: str, port: int) -> str | None:
    """None if ``host:port`` is free to bind; otherwise a short description of who holds it."""
    if _bindable(host, port):
        return None
    pid = _listener_pid(port)
    if pid is None:
        return "another process"
    try:
        name = " ".join(psutil.Process(pid).cmdline()[:3])
    except psutil.Error:
        name = "?"
    return f"pid {pid} ({name})"


def wait_ports_released(host: str, ports: Sequence[int], record: PidRecord, timeout_s: float) -> None:
    """After ``terminate(record)``: wait, up to ``timeout_s``, while one of ``ports`` is still bound by ``record``'s
    own process or by a socket that no process names as its own (one whose owner's exit is still closing it).

    Returns at once when the ports are free or one is listened on by some other process (a foreign holder will
    not let go; the caller reports it)."""
    deadline = time.monotonic() + timeout_s
    while True:
        held = [p for p in ports if not _bindable(host, p)]
        if not held or time.monotonic() >= deadline:
            return
        if any((pid := _listener_pid(p)) is not None and pid != record.pid for p in held):
            return
        time.sleep(0.05)


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _listener_pid(port: int) -> int | None:
    """The pid with a socket listening on ``port`` in its file table, or None if no process has one."""
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
                return conn.pid
    except psutil.Error:
        pass
    return None


def tail(path: Path, lines: int = 50) -> str:
    """The last ``lines`` lines of a text file ('' if it does not exist)."""
    if lines <= 0:
        return ""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            block = 8192
            data = b""
            while size > 0 and data.count(b"\n") <= lines:
                step = min(block, size)
                size -= step
                fh.seek(size)
                data = fh.read(step) + data
    except FileNotFoundError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])
