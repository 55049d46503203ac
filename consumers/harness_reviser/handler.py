"""Pure decisions of the reviser: which cluster to act on, the revision it proposes, and the events that say so.

Clusters are ranked by size, then by the dev success of the capability most of their tasks belong to
(weaker first), then by taxonomy order; the first whose template yields a patch that applies to the base
config is proposed. One revision per round, so each can be evaluated on dev on its own.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, Producer, correlate
from bus_schemas.events import (
    DevSetEvaluated,
    FailureDiagnosed,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessRevisionSkipped,
    TaskSpecified,
)
from consumers.harness_reviser.config import ReviserConfig
from consumers.harness_reviser.rules import TEMPLATES, Cluster, Draft, Procedure, ToolDocs
from harness_service.config import HarnessConfig
from harness_service.revisions import AddInstruction, InvalidPatch, Patch, SetToolNote, apply, patch_digest

VERSION = "0.3.0"  # 0.3.0: successor window edit; 0.2.0: window edits (tool notes, selection) from traces
AUTO = "auto:"


class Writer(Protocol):
    """Writes a template's instruction text; a writer that also has ``write_note(cluster, tool, template)`` writes
    the note of ``set_tool_note`` drafts."""

    name: str

    def write(self, cluster: Cluster, template: str) -> str | None: ...


@dataclass(frozen=True)
class Proposal:
    cluster: Cluster
    patch: Patch
    revised: HarnessConfig
    summary: str


@dataclass(frozen=True)
class Skip:
    reason: str


def clusters(
    diagnoses: Sequence[FailureDiagnosed], tasks: Mapping[str, TaskSpecified], procedure: Procedure | None = None
) -> dict[str, Cluster]:
    """Diagnoses grouped by attribution, in log order, with each failing task's solution trace when known."""
    groups: dict[str, list[FailureDiagnosed]] = {}
    for d in diagnoses:
        groups.setdefault(d.attribution, []).append(d)
    traces: dict[str, tuple[str, ...]] = {}
    for task_id in dict.fromkeys(d.task_id for d in diagnoses):
        task = tasks.get(task_id)
        calls = procedure(task) if procedure is not None and task is not None else None
        if calls:
            traces[task_id] = tuple(calls)
    return {cat: Cluster(cat, tuple(ds), tasks, traces) for cat, ds in groups.items()}  # type: ignore[arg-type]


def _capability(cluster: Cluster) -> str | None:
    caps = Counter(t.category for d in cluster.diagnoses if (t := cluster.tasks.get(d.task_id)) is not None)
    return min(caps, key=lambda c: (-caps[c], c)) if caps else None


def _dev_rate(dev: DevSetEvaluated, capability: str | None) -> float:
    score = dev.per_category.get(capability) if capability else None  # type: ignore[call-overload]
    return score.success_rate if score is not None else 1.0


def _with_writer(draft: Draft, cluster: Cluster, base: HarnessConfig, writer: Writer | None) -> tuple[Patch, str]:
    """The draft with its text written by ``writer`` (instructions, and tool notes when it writes notes); the
    template's text when there is no writer or its text is unusable."""
    if writer is None:
        return draft.patch, "template"
    patch: Patch
    if isinstance(draft.patch, SetToolNote) and hasattr(writer, "write_note"):
        text = writer.write_note(cluster, draft.patch.tool, draft.patch.note)
        if text is None:
            return draft.patch, f"template ({writer.name} gave no usable note)"
        patch = SetToolNote(tool=draft.patch.tool, note=text)
        try:
            apply(base, patch)
        except InvalidPatch as exc:
            return draft.patch, f"template ({writer.name}: {exc})"
        return patch, writer.name
    if not isinstance(draft.patch, AddInstruction):
        return draft.patch, "template"
    text = writer.write(cluster, draft.patch.text)
    if text is None:
        return draft.patch, f"template ({writer.name} gave no usable instruction)"
    patch = AddInstruction(text=text)
    try:
        apply(base, patch)
    except InvalidPatch as exc:
        return draft.patch, f"template ({writer.name}: {exc})"
    return patch, writer.name


def choose(
    dev: DevSetEvaluated,
    diagnoses: Sequence[FailureDiagnosed],
    tasks: Mapping[str, TaskSpecified],
    base: HarnessConfig,
    cfg: ReviserConfig,
    docs: ToolDocs,
    writer: Writer | None = None,
    procedure: Procedure | None = None,
    rejected: Sequence[Patch] = (),
) -> Proposal | Skip:
    """The revision for this round, or why there is none. A draft equal to a ``rejected`` patch (one the paired A/B
    or a reviewer turned down on this base earlier in the run) yields to the next cluster: proposing it again would
    repeat a decision that is already on the log."""
    found = clusters(diagnoses, tasks, procedure)
    counts = ", ".join(f"{c} {len(found[c].diagnoses)}" for c in sorted(found)) or "none"
    order = list(TEMPLATES)
    eligible = sorted(
        (c for c in found.values() if c.category in TEMPLATES and len(c.diagnoses) >= cfg.min_cluster),
        key=lambda c: (-len(c.diagnoses), _dev_rate(dev, _capability(c)), order.index(c.category)),
    )
    if not eligible:
        return Skip(
            f"no fixable failure category reached min_cluster={cfg.min_cluster} in round {dev.round} (diagnoses: "
            f"{counts})"
        )
    repeats: list[str] = []
    for cluster in eligible:
        draft = TEMPLATES[cluster.category](cluster, base, docs)
        if draft is None:
            continue
        patch, author = _with_writer(draft, cluster, base, writer)
        if patch in rejected:
            repeats.append(f"{cluster.category}: {patch.kind}")
            continue
        try:
            revised = apply(base, patch)
        except InvalidPatch:
            continue
        return Proposal(cluster, patch, revised, _summary(dev, cluster, draft, patch, author, len(diagnoses)))
    if repeats:
        return Skip(
            f"every revision the clusters call for was rejected on this base earlier in the run ({', '.join(repeats)})"
            f" or is already in it (diagnoses: {counts})"
        )
    return Skip(f"every revision the clusters call for is already in the base harness (diagnoses: {counts})")


def _summary(dev: DevSetEvaluated, cluster: Cluster, draft: Draft, patch: Patch, author: str, total: int) -> str:
    capability = _capability(cluster)
    dev_part = f"dev overall {dev.overall:.2f}" + (
        f", {capability} {_dev_rate(dev, capability):.2f}" if capability else ""
    )
    examples = "; ".join(cluster.examples())
    return (
        f"{cluster.category}: {len(cluster.diagnoses)} of {total} diagnoses in round {dev.round} ({dev_part}); "
        f"{draft.why}. {patch.kind} by {author}. Examples: {examples}"
    )[:16384]


def revision_id(harness_name: str, base_version: str, round_: int | None, patch: Patch) -> str:
    """Stable for the same base, round and patch: a redelivered or replayed input names the same revision."""
    digest = hashlib.sha256(f"{base_version}\0{round_}\0{patch_digest(patch)}".encode()).hexdigest()
    return f"{harness_name}-r{round_}-{digest[:12]}"


def proposed(
    dev: DevSetEvaluated,
    base_version: str,
    base: HarnessConfig,
    proposal: Proposal,
    patch_ref: BlobRef,
    producer: Producer,
) -> HarnessRevisionProposed:
    return HarnessRevisionProposed(
        producer=producer,
        **correlate(dev),
        harness_name=base.name,
        revision_id=revision_id(base.name, base_version, dev.round, proposal.patch),
        base_version=base_version,
        patch=patch_ref,
        patch_kinds=[proposal.patch.kind],
        summary=proposal.summary,
        targets=[proposal.cluster.category],
        motivated_by=[d.event_id for d in proposal.cluster.diagnoses],
    )


def auto_decided(
    dev: DevSetEvaluated, revision: HarnessRevisionProposed, kind: str, producer: Producer
) -> HarnessRevisionDecided:
    return HarnessRevisionDecided(
        producer=producer,
        **correlate(dev),
        harness_name=revision.harness_name,
        revision_id=revision.revision_id,
        decision="accepted",
        decided_by=f"{AUTO}{kind}",
        reason=f"change kind {kind} is allow-listed for auto-approval",
    )


def skipped(
    dev: DevSetEvaluated, harness_name: str, base_version: str, reason: str, producer: Producer
) -> HarnessRevisionSkipped:
    return HarnessRevisionSkipped(
        producer=producer, **correlate(dev), harness_name=harness_name, base_version=base_version, reason=reason
    )


def is_input(event: Event) -> bool:
    """What the reviser acts on: a model's dev results, or a human's acceptance of a proposal."""
    if isinstance(event, DevSetEvaluated):
        return event.model_dev_score
    return (
        isinstance(event, HarnessRevisionDecided)
        and event.decision == "accepted"
        and not event.decided_by.startswith(AUTO)
    )
