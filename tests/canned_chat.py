"""A canned OpenAI-compatible chat-completions endpoint on 127.0.0.1, for the clients of the inference port.

It stands for the model behind a server, not for our infrastructure: the real ``transformers serve`` runs in
``tests/integration/test_serve_model.py``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "completion_tokens_details": {"reasoning_tokens": 5}}


Reply = str | Callable[[dict[str, Any]], dict[str, Any]]
"""A reply's content, or a function of the request body that returns the whole message (e.g. native tool calls)."""


class CannedChat:
    """Answers ``/v1/chat/completions`` with ``replies`` in order (the last one repeats), records every request body;
    with ``api_key`` any other bearer token (or path) gets a 401. A context manager; ``url`` ends in ``/v1``."""

    def __init__(self, replies: Sequence[Reply], api_key: str | None = None, usage: dict[str, Any] = USAGE) -> None:
        self.replies, self.api_key, self.usage = list(replies), api_key, usage
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        chat = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                bearer = self.headers.get("Authorization")
                if self.path != "/v1/chat/completions" or (chat.api_key and bearer != f"Bearer {chat.api_key}"):
                    self._send(401, {"error": "unauthorised"})
                    return
                chat.requests.append(body)
                reply = chat.replies[min(len(chat.requests), len(chat.replies)) - 1]
                message = reply(body) if callable(reply) else {"role": "assistant", "content": reply}
                self._send(200, {"choices": [{"message": message}], "usage": chat.usage})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> CannedChat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
