"""Real Android devices over ADB (adbutils): typed tools mapped to allow-listed adb operations only."""

from producers.backends.device.allowlist import DEFAULT_ALLOWED, AdbGate, OperationDenied
from producers.backends.device.backend import DeviceBackend, NoDevice, connect_device
from producers.backends.device.operations import AdbOperation
from producers.backends.device.tools import DEVICE_TOOLS, DeviceTool

__all__ = [
    "DEFAULT_ALLOWED",
    "DEVICE_TOOLS",
    "AdbGate",
    "AdbOperation",
    "DeviceTool",
    "DeviceBackend",
    "NoDevice",
    "OperationDenied",
    "connect_device",
]
