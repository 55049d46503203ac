"""Write a RunReport under ``runs/<run_id>/``: report.json, PNG plots, and report.html that shows them."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first

from infra.report.model import CATEGORIES, RoundRow, RunReport  # noqa: E402


def _plot_dev(report: RunReport, path: Path) -> None:
    rounds = [r.round for r in report.rounds if r.dev_overall is not None]
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=110)
    ax.plot(
        rounds,
        [r.dev_overall for r in report.rounds if r.dev_overall is not None],
        "o-",
        lw=2.5,
        color="black",
        label="Overall",
    )
    for cat in CATEGORIES:
        ax.plot(
            rounds,
            [r.dev_per_category.get(cat, 0.0) for r in report.rounds if r.dev_overall is not None],
            "o--",
            lw=1.2,
            label=cat,
        )
    ax.set(xlabel="round", ylabel="dev success", ylim=(-0.02, 1.02), title="Dev success per round")
    ax.set_xticks(rounds)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plot_cost(report: RunReport, path: Path) -> None:
    rows = [
        (r.round, r.tokens_per_solved, r.tool_calls_per_solved or 0.0)
        for r in report.rounds
        if r.tokens_per_solved is not None
    ]
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=110)
    if rows:
        ax.bar([n - 0.2 for n, _, _ in rows], [tokens for _, tokens, _ in rows], width=0.4, label="tokens / solved")
        twin = ax.twinx()
        twin.bar(
            [n + 0.2 for n, _, _ in rows],
            [calls for _, _, calls in rows],
            width=0.4,
            color="tab:orange",
            label="tool calls / solved",
        )
        twin.set_ylabel("tool calls per solved task")
        ax.set_xticks([n for n, _, _ in rows])
    ax.set(xlabel="round", ylabel="tokens per solved task", title="Cost per solved task")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plot_curation(report: RunReport, path: Path) -> None:
    rounds = [r.round for r in report.rounds]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), dpi=110)
    bottom = [0] * len(rounds)
    for label, values in (
        ("admitted", [r.admitted for r in report.rounds]),
        ("rejected", [r.rejected for r in report.rounds]),
        ("quarantined", [r.quarantined for r in report.rounds]),
    ):
        left.bar(rounds, values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    left.set(xlabel="round", ylabel="trajectories", title="Curation decisions")
    left.set_xticks(rounds)
    left.legend(fontsize=8)
    labels = sorted({k for r in report.rounds for k in r.failures})
    bottom = [0] * len(rounds)
    for label in labels:
        values = [r.failures.get(label, 0) for r in report.rounds]
        right.bar(rounds, values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    right.set(xlabel="round", ylabel="diagnosed failures", title="Failure attributions")
    right.set_xticks(rounds)
    if labels:
        right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _table(report: RunReport) -> str:
    head = (
        "round",
        "dev Overall",
        "vs previous round [95%] won/lost",
        *CATEGORIES,
        "episodes",
        "solved",
        "tokens/solved",
        "tool calls/solved",
        "admitted",
        "admitted self",
        "train examples (self)",
        "rejected",
        "quarantined",
        "test Overall",
        "model",
        "harness",
        "wall s",
    )
    rows = []
    for r in report.rounds:
        cells = (
            r.round,
            "" if r.dev_overall is None else f"{r.dev_overall:.3f}",
            versus_previous(r),
            *(f"{r.dev_per_category[c]:.3f}" if c in r.dev_per_category else "" for c in CATEGORIES),
            r.episodes,
            r.solved,
            "" if r.tokens_per_solved is None else f"{r.tokens_per_solved:.0f}",
            "" if r.tool_calls_per_solved is None else f"{r.tool_calls_per_solved:.1f}",
            r.admitted,
            r.admitted_self,
            "" if r.train_examples is None else f"{r.train_examples} ({r.train_examples_self})",
            r.rejected,
            r.quarantined,
            "" if r.test_overall is None else f"{r.test_overall:.3f} ({r.test_model_version})",
            r.dev_model_version or "",
            r.dev_harness_version or "",
            "" if r.wall_time_s is None else f"{r.wall_time_s:.0f}",
        )
        rows.append(cells)
    return _html_table(head, rows)


def _html_table(head: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A header row and one row per cell sequence, every cell escaped."""
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>" + cells + "</table>"


def _templates(report: RunReport) -> str:
    """One row per template: its difficulty, per round what the round's model solved of its dev tasks, and per round
    with any how many of the model's own trajectories of it were admitted (what the round learned from itself)."""
    rounds = [r for r in report.rounds if r.dev_per_template]
    learned = [r for r in report.rounds if r.admitted_self_templates]
    templates = sorted(
        {t for r in rounds for t in r.dev_per_template} | {t for r in learned for t in r.admitted_self_templates}
    )
    if not templates:
        return "<p>none</p>"
    head = (
        "template",
        "difficulty",
        *(f"round {r.round} dev" for r in rounds),
        *(f"round {r.round} own admitted" for r in learned),
    )
    rows = []
    for template in templates:
        cells = [r.dev_per_template.get(template) for r in rounds]
        difficulty = next((c["difficulty"] for c in cells if c is not None), "")
        shown = ["" if c is None else f"{c['solved']}/{c['tasks']}" for c in cells]
        own = [r.admitted_self_templates.get(template, "") for r in learned]
        rows.append((template, difficulty, *shown, *own))
    return _html_table(head, rows)


def learned_from_itself(row: RoundRow) -> str:
    """``mem.wake_alarm 2 (dev 3/3), tu.unread_from 1 (dev 0/2)``: the model's own admitted trajectories of the round
    by template, each with what the round's model solved of that template on dev (when it was evaluated there)."""
    parts = []
    for template, count in row.admitted_self_templates.items():
        dev = row.dev_per_template.get(template)
        parts.append(f"{template} {count}" + ("" if dev is None else f" (dev {dev['solved']}/{dev['tasks']})"))
    return ", ".join(parts)


def versus_previous(row: RoundRow) -> str:
    """``+0.031 [-0.012, +0.075] 3/1`` for a round whose model was compared with the previous round's on dev."""
    paired = row.dev_vs_previous
    if paired is None:
        return ""
    low, high = paired["interval"]
    return f"{paired['delta']:+.3f} [{low:+.3f}, {high:+.3f}] {paired['won']}/{paired['lost']}"


def _figure(value: float | None, signed: bool = False) -> str:
    return "" if value is None else (f"{value:+.3f}" if signed else f"{value:.3f}")


def _revisions(report: RunReport) -> str:
    """One row per harness revision: what changed, on what diagnoses, and the paired dev A/B against its parent."""
    head = ("round", "revision", "patch", "basis", "dev parent", "dev revision", "paired delta [95%]", "won/lost")
    rows = []
    for r in report.rounds:
        for v in r.revisions:
            interval = v.get("paired_interval")
            delta = _figure(v.get("paired_delta"), signed=True)
            if delta and interval:
                delta += f" [{interval[0]:+.3f}, {interval[1]:+.3f}]"
            cells = (
                r.round,
                v["revision_id"],
                ", ".join(v["patch_kinds"]),
                ", ".join(f"{label} {n}" for label, n in v["basis"].items()),
                _figure(v.get("dev_parent")),
                _figure(v.get("dev_revision")),
                delta,
                "" if v.get("won") is None else f"{v['won']}/{v['lost']}",
            )
            promoted = "promoted" if v["promoted"] else "not promoted"
            patch = f" | patch: {json.dumps(v['patch'], sort_keys=True)}" if v.get("patch") is not None else ""
            summary = html.escape(f"{v['summary']}{patch} | A/B: {v['decision']}")
            rows.append(
                "<tr>"
                + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
                + f"<td>{promoted}</td></tr>"
                + f'<tr><td></td><td colspan="{len(head)}" style="text-align:left">{summary}</td></tr>'
            )
    if not rows:
        return "<p>none</p>"
    cols = "".join(f"<th>{html.escape(h)}</th>" for h in (*head, "@production"))
    return f"<table><tr>{cols}</tr>{''.join(rows)}</table>"


def _versions(report: RunReport) -> str:
    items = []
    for r in report.rounds:
        for m in r.models_registered:
            items.append(
                f"<li>round {r.round}: model <code>{html.escape(m['model'])}</code> "
                f"({html.escape(m['mlflow'])}, training run {html.escape(m['training_run_id'])})</li>"
            )
        for h in r.harness_published:
            items.append(
                f"<li>round {r.round}: harness <code>{html.escape(h['harness'])}</code> "
                f"({html.escape(h['mlflow'])})</li>"
            )
    return "<ul>" + "".join(items) + "</ul>" if items else "<p>none</p>"


def write_report(report: RunReport, out_dir: Path) -> Path:
    """Write report.json, dev.png, cost.png, curation.png and report.html; returns the HTML path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.json").write_text(json.dumps(report.to_json(), indent=2, sort_keys=True))
    _plot_dev(report, out_dir / "dev.png")
    _plot_cost(report, out_dir / "cost.png")
    _plot_curation(report, out_dir / "curation.png")
    settings = "".join(
        f"<li>{html.escape(k)} = <code>{html.escape(v)}</code></li>" for k, v in report.shown_settings().items()
    )
    title = f"planner-flywheel {html.escape(report.run_id)}"
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1100px}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}img{{max-width:100%}}</style></head><body>
<h1>planner-flywheel run {html.escape(report.run_id)}</h1>
<ul>{settings}</ul>
<h2>Per round</h2>{_table(report)}
<h2>Dev success</h2><img src="dev.png" alt="dev success per round">
<h2>Per template: each round's dev solved / tasks and its own admitted trajectories</h2>{_templates(report)}
<h2>Cost per solved task</h2><img src="cost.png" alt="tokens and tool calls per solved task">
<h2>Curation and failures</h2><img src="curation.png" alt="curation decisions and failure attributions">
<h2>Harness revisions (paired dev A/B against the parent, same model and tasks)</h2>{_revisions(report)}
<h2>Model and harness versions</h2>{_versions(report)}
<p>The same numbers are in <a href="report.json">report.json</a>.</p></body></html>"""
    path = out_dir / "report.html"
    path.write_text(page)
    return path
