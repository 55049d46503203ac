"""Progress bars per stage of the current round and one summary line per finished round (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from infra.loop.monitor import RoundProgress, RunMonitor, summary_line

BARS = ("rollouts", "verification", "curation", "training", "dev evaluation", "harness revision")


class LoopView:
    """Owns a rich Progress; ``refresh(monitor)`` moves the bars, ``training(done, total)`` is the trainer's hook."""

    def __init__(self, console: Console, *, enabled: bool = True) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]{task.description:<28}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[note]}"),
            TimeElapsedColumn(),
            console=console,
            disable=not enabled,
            transient=False,
        )
        self._round: int | None = None
        self._bars: dict[str, TaskID] = {}
        self._printed: set[int] = set()

    def __enter__(self) -> LoopView:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def training(self, done: int, total: int) -> None:
        if "training" in self._bars:
            self.progress.update(self._bars["training"], completed=done, total=total, note="SFT/RL steps")

    def refresh(self, monitor: RunMonitor) -> None:
        for number in sorted(monitor.rounds):
            r = monitor.rounds[number]
            if r.completed is not None and number not in self._printed:
                self._printed.add(number)
                self._finish(r)
                self.progress.console.print(summary_line(r))
        current = max(
            (n for n, r in monitor.rounds.items() if r.started is not None and r.completed is None), default=None
        )
        if current is None:
            return
        if current != self._round:
            self._start(current)
        self._update(monitor.rounds[current])

    def _start(self, number: int) -> None:
        for bar in self._bars.values():
            self.progress.remove_task(bar)
        self._round = number
        self._bars = {s: self.progress.add_task(f"round {number} {s}", total=None, note="") for s in BARS}

    def _finish(self, r: RoundProgress) -> None:
        if r.round == self._round:
            for bar in self._bars.values():
                self.progress.remove_task(bar)
            self._bars, self._round = {}, None

    def _update(self, r: RoundProgress) -> None:
        bars = self._bars
        self.progress.update(bars["rollouts"], completed=r.ended, total=r.planned or None, note=f"{r.solved} solved")
        self.progress.update(
            bars["verification"],
            completed=r.verified,
            total=r.planned or None,
            note=f"{r.diagnosed} failures diagnosed",
        )
        self.progress.update(
            bars["curation"],
            completed=r.curated,
            total=r.planned or None,
            note=f"{r.admitted} admitted, {r.rejected} rejected, {r.quarantined} quarantined",
        )
        if r.training in ("succeeded", "failed"):
            self.progress.update(bars["training"], completed=1, total=1, note=r.model or "failed")
        self.progress.update(
            bars["dev evaluation"],
            completed=r.dev_verified,
            total=r.dev_planned or None,
            note=f"Overall {r.dev.overall:.3f}" if r.dev else "",
        )
        done = 1 if r.harness in ("skipped", "rejected", "proposed") or r.harness_evals else 0
        self.progress.update(bars["harness revision"], completed=done, total=1, note=r.harness)
