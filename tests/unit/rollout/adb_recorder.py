"""A loopback TCP server speaking the adb host protocol that records every request it receives.

It stands where the adb server would, so a test can see exactly what reached "adb" (and what did not).
"""

from __future__ import annotations

import socket
import threading

from stack_support import free_port

OKAY, FAIL = b"OKAY", b"FAIL"


def _block(text: bytes) -> bytes:
    return f"{len(text):04x}".encode() + text


class RecordingAdbServer:
    """Answers host:version, host:devices, host:transport:<serial> and shell:<cmd>; records each request."""

    def __init__(self, devices: tuple[str, ...] = ("emulator-5554",), shell_output: bytes = b"ok\n") -> None:
        self.devices = devices
        self.shell_output = shell_output
        self.requests: list[str] = []
        self._sock = socket.create_server(("127.0.0.1", free_port()))  # below the ephemeral range
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def shell_commands(self) -> list[str]:
        return [r.removeprefix("shell:") for r in self.requests if r.startswith("shell:")]

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        with conn:
            while True:
                size = conn.recv(4)
                if len(size) < 4:
                    return
                request = b""
                while len(request) < int(size, 16):
                    request += conn.recv(int(size, 16) - len(request))
                text = request.decode()
                self.requests.append(text)
                if not self._answer(conn, text):
                    return

    def _answer(self, conn: socket.socket, request: str) -> bool:
        """Send the reply; True when the connection stays open for another request."""
        if request == "host:version":
            conn.sendall(OKAY + _block(b"0028"))
        elif request in {"host:devices", "host:devices-l"}:
            conn.sendall(OKAY + _block("".join(f"{d}\tdevice\n" for d in self.devices).encode()))
        elif request.startswith("host:transport:"):
            if request.removeprefix("host:transport:") not in self.devices:
                conn.sendall(FAIL + _block(b"device not found"))
                return False
            conn.sendall(OKAY)
            return True
        elif request.startswith("shell:"):
            conn.sendall(OKAY + self.shell_output)
        else:
            conn.sendall(FAIL + _block(f"unknown request {request}".encode()))
        return False

    def close(self) -> None:
        self._sock.close()
