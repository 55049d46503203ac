"""Throughput of the event codec per event type, next to plain orjson parsing of the same bytes.

Run: .venv/bin/python bench/schemas.py [--seconds 24] [--n N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import orjson

from bus_schemas import EVENT_TYPES, decode, encode
from bus_schemas.examples import golden_path


def rate(fn: Callable[[], Any], *, seconds: float | None, n: int | None) -> float:
    """Calls per second of ``fn``: ``n`` calls if given, otherwise as many as fit in ``seconds``."""
    if n is not None:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        return n / (time.perf_counter() - start)
    calls, batch, start = 0, 64, time.perf_counter()
    deadline = start + (seconds or 0.1)
    while (now := time.perf_counter()) < deadline:
        for _ in range(batch):
            fn()
        calls += batch
    return calls / (now - start)


def cases() -> list[tuple[str, bytes]]:
    """(label, wire bytes) for every current event type plus the upcast path of the old EpisodeEnded v1."""
    rows = [(name, golden_path(name).read_bytes().rstrip(b"\n")) for name in sorted(EVENT_TYPES)]
    rows.append(("EpisodeEnded.v1 (upcast)", golden_path("EpisodeEnded", 1).read_bytes().rstrip(b"\n")))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=24.0, help="total time budget (default 24 s)")
    parser.add_argument("--n", type=int, default=None, help="fixed calls per measurement instead of a time budget")
    args = parser.parse_args()
    rows = cases()
    per_measurement = args.seconds / (3 * len(rows))

    print(f"{'event type':<26}{'bytes':>7}{'decode/s':>12}{'encode/s':>12}{'orjson/s':>12}{'orjson÷decode':>15}")
    totals = {"decode": 0.0, "encode": 0.0, "orjson": 0.0}
    for label, data in rows:
        event = decode(data)
        decode_rate = rate(partial(decode, data), seconds=per_measurement, n=args.n)
        encode_rate = rate(partial(encode, event), seconds=per_measurement, n=args.n)
        orjson_rate = rate(partial(orjson.loads, data), seconds=per_measurement, n=args.n)
        for key, value in (("decode", decode_rate), ("encode", encode_rate), ("orjson", orjson_rate)):
            totals[key] += 1 / value  # harmonic mean: the rate of a stream with one of each type
        print(
            f"{label:<26}{len(data):>7}{decode_rate:>12,.0f}{encode_rate:>12,.0f}"
            f"{orjson_rate:>12,.0f}{orjson_rate / decode_rate:>14.1f}x"
        )
    mixed = {key: len(rows) / value for key, value in totals.items()}
    print(
        f"{'mixed stream':<26}{'':>7}{mixed['decode']:>12,.0f}{mixed['encode']:>12,.0f}"
        f"{mixed['orjson']:>12,.0f}{mixed['orjson'] / mixed['decode']:>14.1f}x"
    )
    print("decode = one-pass JSON parse + pydantic validation (+ upcasting for old versions); single thread")


if __name__ == "__main__":
    main()
