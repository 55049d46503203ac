"""The ``bfcl`` judge: BFCL's own checks, on our evidence, plus any call criteria the task carries.

- state: after the episode every involved instance has the public attributes it has after the ground truth
  was replayed on fresh instances (BFCL's ``state_checker``);
- response: every ground-truth call's result text is among the episode's result texts, in any order (BFCL's
  ``response_checker``). A ground-truth call that our tool schema rejects (BFCL's data has one) is left out.

- the task's criteria, if any (``bfcl_tasks(call_criteria=True)`` adds the expected tools in order), by the
  shared check of ``producers/backends/sandbox/verify.py``.

BFCL checks state and response after every turn; the backend does not see turn boundaries, so they are
checked once, at the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bus_schemas.events.tasks import TaskSpecified
from producers.backends.base import Evidence
from producers.backends.bfcl.tasks import expected_calls, world_for
from producers.backends.evidence import LeanEvidence
from producers.backends.sandbox.verify import CriterionResult, VerificationResult
from producers.backends.sandbox.verify import verify as shared_verify


def replay(params: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The state after the ground truth on fresh instances, and the result texts of its successful calls."""
    world = world_for(dict(params))
    texts = []
    for turn in expected_calls(dict(params)):
        for call in turn:
            step = world.call(call)
            if step.error is None:
                texts.append(step.text)
    return world.state(), texts


def _differences(final: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    out = []
    for cls, attrs in expected.items():
        got = final.get(cls)
        if not isinstance(got, Mapping):
            out.append(f"{cls}: missing")
            continue
        out += [f"{cls}.{attr}" for attr, value in attrs.items() if got.get(attr) != value]
    return out


def _missing(expected: list[str], got: list[str]) -> list[str]:
    left = list(got)
    missing = []
    for text in expected:
        try:
            left.remove(text)
        except ValueError:
            missing.append(text)
    return missing


def verify(task: TaskSpecified, evidence: Evidence | LeanEvidence, final_answer: str = "") -> VerificationResult:
    """Judge one episode of a BFCL task; the outcome is true only when every check passes."""
    expected_state, expected_texts = replay(task.backend_params)
    final = evidence.final_state
    if not isinstance(final, Mapping):
        raise TypeError(f"{evidence.backend} evidence carries no JSON object state")
    diff = _differences(final, expected_state)
    results = [
        CriterionResult(
            "bfcl.state",
            not diff,
            f"differs from the ground truth's final state: {', '.join(diff[:8])}" if diff else "state matches",
        )
    ]
    texts = [str(c.get("result_text")) for c in evidence.calls if c.get("ok")]
    missing = _missing(expected_texts, texts)
    results.append(
        CriterionResult(
            "bfcl.response",
            not missing,
            f"{len(missing)} expected result(s) never returned, e.g. {missing[0][:200]!r}"
            if missing
            else "all returned",
        )
    )
    if task.criteria:  # the task's own criteria (e.g. the expected calls), judged by the shared check
        results += shared_verify(task, evidence, final_answer).criteria
    return VerificationResult(all(r.passed for r in results), results)
