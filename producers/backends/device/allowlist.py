"""The gate every adb call goes through: an operation runs only if its kind is allowed and its argv is well-formed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from producers.backends.device.operations import PROGRAMS, AdbOperation

DEFAULT_ALLOWED: frozenset[str] = frozenset(PROGRAMS)


class OperationDenied(PermissionError):
    """An operation outside the allow-list; it never reaches adb."""


class ShellDevice(Protocol):
    """The one adbutils call the gate uses (``AdbDevice.shell`` with an argv list)."""

    def shell(self, cmdargs: list[str], *, encoding: str | None = "utf-8", timeout: float | None = ...): ...


class AdbGate:
    """Holds the device; nothing else in the backend talks to it."""

    def __init__(self, device: ShellDevice, allowed: Iterable[str] = DEFAULT_ALLOWED, timeout_s: float = 30.0) -> None:
        unknown = set(allowed) - set(PROGRAMS)
        if unknown:
            raise ValueError(f"unknown adb operations in the allow-list: {', '.join(sorted(unknown))}")
        self._device = device
        self.allowed = frozenset(allowed)
        self.timeout_s = timeout_s

    def check(self, op: AdbOperation) -> None:
        if op.kind not in self.allowed:
            raise OperationDenied(
                f"adb operation {op.kind} is not allowed here; allowed: {', '.join(sorted(self.allowed))}"
            )
        program = PROGRAMS[op.kind]
        if op.argv[: len(program)] != program:
            raise OperationDenied(f"{op.kind} must run {' '.join(program)}, not {op.argv[0]!r}")

    def run(self, op: AdbOperation, *, binary: bool = False) -> str | bytes:
        self.check(op)
        return self._device.shell(list(op.argv), encoding=None if binary else "utf-8", timeout=self.timeout_s)
