"""``DeviceBackend``: an episode on a real Android device over ADB; every call goes through the ``AdbGate``.

Screenshots go to the blob store (the observation carries the BlobRef). Verification reads device
state over adb: ``evidence()`` runs the task's ``fixtures.verify_queries`` (content URIs) on the device.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import adbutils
from jsonschema import Draft202012Validator

from bus_schemas.actions import ToolCall, ToolError
from harness_service.ports import BlobSink
from producers.backends.base import Evidence, Observation, ToolSpec, TrustLevel
from producers.backends.device.allowlist import DEFAULT_ALLOWED, AdbGate, OperationDenied, ShellDevice
from producers.backends.device.operations import InvalidOperation, content_query, input_keyevent
from producers.backends.device.tools import DEVICE_TOOLS

SCREENSHOT_MEDIA_TYPE = "image/png"


class NoDevice(RuntimeError):
    """No device with that serial is attached to the adb server (or the server is not running)."""


def connect_device(serial: str | None, host: str = "127.0.0.1", port: int = 5037) -> ShellDevice:
    """The device ``serial`` (or the only one attached) on the adb server at host:port, or ``NoDevice``."""
    client = adbutils.AdbClient(host=host, port=port)
    try:
        attached = [d.serial for d in client.device_list()]
    except (adbutils.AdbError, OSError) as exc:
        raise NoDevice(f"no device: the adb server at {host}:{port} is not reachable ({exc})") from exc
    if serial is None and len(attached) == 1:
        serial = attached[0]
    if serial is None or serial not in attached:
        wanted = serial or "any device"
        raise NoDevice(
            f"no device: {wanted} is not attached to the adb server at {host}:{port} "
            f"(attached: {', '.join(attached) or 'none'})"
        )
    return client.device(serial)


def _error(code: str, message: str) -> Observation:
    return Observation(error=ToolError(code=code, message=message[:4000]))  # type: ignore[arg-type]


class DeviceBackend:
    """One device session; the pool creates one per attached device."""

    name = "device"
    trust: TrustLevel = "device"

    def __init__(self, device: ShellDevice, blobs: BlobSink, allowed: Iterable[str] = DEFAULT_ALLOWED) -> None:
        self._gate = AdbGate(device, allowed)
        self._blobs = blobs
        self._calls: list[dict[str, Any]] = []
        self._task: Any = None
        self._tools = {name: tool for name, tool in DEVICE_TOOLS.items() if tool.kind in self._gate.allowed}

    def reset(self, task: Any, seed: int | None = None) -> Observation:
        self._task, self._calls = task, []
        self._gate.run(input_keyevent("HOME"))
        return Observation(result={"device": "ready", "tools": sorted(self._tools)})

    def tools(self) -> list[ToolSpec]:
        return [tool.spec for tool in self._tools.values()]

    def step(self, call: ToolCall) -> Observation:
        observation = self._step(call)
        self._calls.append({"tool": call.name, "args": call.args, "ok": observation.ok})
        return observation

    def _step(self, call: ToolCall) -> Observation:
        tool = self._tools.get(call.name)
        if tool is None:
            return _error(
                "unknown_tool", f"{call.name} is not a device tool here; tools: {', '.join(sorted(self._tools))}"
            )
        bad = next(iter(Draft202012Validator(tool.spec.parameters).iter_errors(call.args)), None)
        if bad is not None:
            return _error("invalid_argument", f"args{''.join(f'[{p!r}]' for p in bad.path)}: {bad.message}")
        try:
            op = tool.build(**call.args)
            if op.kind == "screencap":
                png = self._gate.run(op, binary=True)
                assert isinstance(png, bytes)  # binary=True: adb returns the raw bytes
                ref = self._blobs.put(png, SCREENSHOT_MEDIA_TYPE)
                return Observation(result={"screenshot": ref.model_dump(mode="json")})
            return Observation(result={"output": str(self._gate.run(op))[:8000]})
        except InvalidOperation as exc:
            return _error("invalid_argument", str(exc))
        except OperationDenied as exc:
            return _error("permission_denied", str(exc))
        except (adbutils.AdbError, OSError) as exc:
            return _error("unavailable", f"adb: {exc}")

    def evidence(self) -> Evidence:
        fixtures = getattr(getattr(self._task, "initial_conditions", None), "fixtures", {}) or {}
        state = {uri: str(self._gate.run(content_query(uri))) for uri in fixtures.get("verify_queries", [])}
        return Evidence(backend=self.name, initial_state={}, final_state=state, calls=self._calls)

    def close(self) -> None:
        self._calls = []
