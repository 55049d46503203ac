"""What a run raises when one of its consumer processes (a rollout worker included) exits under it."""

from __future__ import annotations

from pathlib import Path


class ConsumerDied(RuntimeError):
    """A consumer process exited while the run was going on."""


def raise_if_exited(name: str, exitcode: int | None, log: Path) -> None:
    """Raise ``ConsumerDied`` with the end of the process's log when it has exited (``exitcode`` is not None)."""
    if exitcode is not None:
        tail = log.read_text(errors="replace")[-3000:]
        raise ConsumerDied(f"consumer {name} exited with {exitcode}; its log ({log}) ends:\n{tail}")
