"""Environment-pool usage for ``flywheel status``: one row per worker process and backend kind."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from producers.pool.snapshot import read_snapshots


def pool_table(state_dir: Path = Path(".flywheel/state"), max_age_s: float = 120.0) -> Table | str:
    """A table of the snapshots rollout workers wrote in the last ``max_age_s`` seconds, or a one-line note."""
    snapshots = read_snapshots(state_dir, max_age_s)
    if not snapshots:
        return f"no rollout worker reported pool usage in the last {max_age_s:.0f} s (state dir {state_dir})"
    table = Table(
        "worker", "backend", "leased / cap", "idle", "created", "expired", "leases", "age", title="environment pool"
    )
    for worker, age, usage in snapshots:
        for kind in usage:
            table.add_row(
                worker,
                kind.kind,
                f"{kind.leased} / {kind.cap}",
                str(kind.idle),
                str(kind.created),
                str(kind.expired),
                str(kind.leases),
                f"{age:.0f} s",
            )
    return table
