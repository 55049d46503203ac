"""The ADB backend: typed tools -> allow-listed adb operations, observed at the adb server's side."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest
from adb_recorder import RecordingAdbServer
from stack_support import free_port

from bus_schemas.actions import ToolCall
from bus_schemas.blob_ref import BlobRef
from infra.blobs.filesystem import FileBlobStore
from producers.backends.device import DeviceBackend, NoDevice, connect_device
from producers.backends.device.operations import InvalidOperation, am_start, input_text

pytestmark = pytest.mark.unit
SERIAL = "emulator-5554"


@pytest.fixture
def adb() -> Iterator[RecordingAdbServer]:
    server = RecordingAdbServer((SERIAL,))
    yield server
    server.close()


@pytest.fixture
def blobs(tmp_path) -> FileBlobStore:
    return FileBlobStore(tmp_path / "blobs")


@pytest.fixture
def backend(adb: RecordingAdbServer, blobs: FileBlobStore) -> DeviceBackend:
    return DeviceBackend(connect_device(SERIAL, port=adb.port), blobs)


def test_typed_tools_reach_adb_as_exact_allow_listed_commands(backend: DeviceBackend, adb: RecordingAdbServer) -> None:
    backend.reset(task=None)
    assert backend.step(ToolCall(name="device.tap", args={"x": 120, "y": 640})).ok
    assert backend.step(ToolCall(name="device.type_text", args={"text": "hello world"})).ok
    query = ToolCall(name="device.query_content", args={"uri": "content://contacts/people", "projection": ["name"]})
    assert backend.step(query).result == {"output": "ok"}
    start = ToolCall(
        name="device.start_activity",
        args={"package": "com.android.settings", "action": "android.settings.WIFI_SETTINGS"},
    )
    assert backend.step(start).ok
    assert adb.shell_commands == [
        "input keyevent 3",
        "input tap 120 640",
        "input text hello%sworld",
        "content query --uri content://contacts/people --projection name",
        "am start -W -a android.settings.WIFI_SETTINGS -p com.android.settings",
    ]


def test_denied_and_malformed_operations_never_reach_adb(adb: RecordingAdbServer, blobs: FileBlobStore) -> None:
    backend = DeviceBackend(connect_device(SERIAL, port=adb.port), blobs, allowed={"input_tap", "input_keyevent"})
    backend.reset(task=None)
    before = list(adb.requests)
    attempts = [
        ToolCall(name="device.shell", args={"command": "rm -rf /sdcard"}),
        ToolCall(name="device.start_activity", args={"package": "com.evil"}),  # not allowed here
        ToolCall(name="device.tap", args={"x": 1, "y": 2, "command": "reboot"}),  # extra argument
        ToolCall(name="device.tap", args={"x": "1; reboot", "y": 2}),
    ]
    codes = [backend.step(a).error.code for a in attempts]  # type: ignore[union-attr]
    assert codes == ["unknown_tool", "unknown_tool", "invalid_argument", "invalid_argument"]
    assert adb.requests == before
    assert {t.name for t in backend.tools()} == {"device.tap", "device.press_key"}


def test_shell_metacharacters_are_refused_before_adb(backend: DeviceBackend, adb: RecordingAdbServer) -> None:
    sneaky = [
        ToolCall(name="device.type_text", args={"text": "a; reboot"}),
        ToolCall(name="device.start_activity", args={"package": "com.x", "data": "content://a$(reboot)"}),
        ToolCall(name="device.query_content", args={"uri": "content://a", "where": "x`id`"}),
    ]
    assert all(backend.step(c).error.code == "invalid_argument" for c in sneaky)  # type: ignore[union-attr]
    assert adb.shell_commands == []
    with pytest.raises(InvalidOperation):
        input_text("$(id)")
    with pytest.raises(InvalidOperation):
        am_start("com.x", activity="A && reboot")


def test_screenshots_are_stored_as_blobs(adb: RecordingAdbServer, blobs: FileBlobStore) -> None:
    adb.shell_output = b"\x89PNG\r\n\x1a\nfake"
    backend = DeviceBackend(connect_device(SERIAL, port=adb.port), blobs)
    shot = backend.step(ToolCall(name="device.screenshot"))
    ref = shot.result["screenshot"]  # type: ignore[index]
    assert ref["media_type"] == "image/png" and adb.shell_commands == ["screencap -p"]
    assert blobs.get(BlobRef.model_validate(ref)) == b"\x89PNG\r\n\x1a\nfake"


def test_verification_reads_device_state_over_adb(backend: DeviceBackend, adb: RecordingAdbServer) -> None:
    class Task:
        class initial_conditions:  # noqa: N801 - mimics TaskSpecified's attribute
            fixtures = {"verify_queries": ["content://settings/global"]}

    backend.reset(Task())
    evidence = backend.evidence()
    assert evidence.final_state == {"content://settings/global": "ok"} and evidence.backend == "device"
    assert adb.shell_commands[-1] == "content query --uri content://settings/global"


def test_an_unknown_serial_is_a_clear_no_device_error(adb: RecordingAdbServer) -> None:
    with pytest.raises(NoDevice, match=r"no device: pixel-9 is not attached .* \(attached: emulator-5554\)"):
        connect_device("pixel-9", port=adb.port)


@pytest.mark.skipif(shutil.which("adb") is None, reason="the Debian package adb is not installed")
def test_a_real_adb_server_without_devices_gives_no_device() -> None:
    port = free_port()
    subprocess.run(["adb", "-P", str(port), "start-server"], check=True, capture_output=True, timeout=60)
    try:
        with pytest.raises(NoDevice, match=r"no device: any device is not attached .* \(attached: none\)"):
            connect_device(None, port=port)
    finally:
        subprocess.run(["adb", "-P", str(port), "kill-server"], capture_output=True, timeout=60)


def test_no_adb_server_at_all_is_a_clear_no_device_error() -> None:
    with pytest.raises(NoDevice, match="not reachable"):
        connect_device(SERIAL, port=free_port())


@pytest.mark.device
def test_a_real_device_runs_a_screenshot(blobs: FileBlobStore) -> None:
    try:
        device = connect_device(None)
    except NoDevice as exc:
        pytest.skip(str(exc))
    shot = DeviceBackend(device, blobs).step(ToolCall(name="device.screenshot"))
    assert shot.ok and shot.result["screenshot"]["size"] > 0  # type: ignore[index]
