"""A third-party environment as a test plugin: an "echo" backend, its judge and a state predicate.

The tests register these through fake entry points (``plugins_support.py``), exactly as a distribution would in
its ``pyproject.toml``; nothing in the project names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bus_schemas.actions import ToolCall
from producers.backends.base import Evidence, Observation, ToolSpec
from producers.backends.sandbox.verify import CriterionResult, VerificationResult

SAY = ToolSpec(name="echo.say", description="Say something.", parameters={"type": "object"}, writes=True)


class EchoBackend:
    """Remembers what it was told; the world state is the list of things said."""

    name = "echo"
    trust = "simulated"

    def __init__(self) -> None:
        self.said: list[str] = []

    def reset(self, task: Any, seed: int | None = None) -> Observation:
        self.said = []
        return Observation(result={"goal": task.goal})

    def tools(self) -> list[ToolSpec]:
        return [SAY]

    def step(self, call: ToolCall) -> Observation:
        self.said.append(str(call.args.get("text", "")))
        return Observation(result="ok")

    def evidence(self) -> Evidence:
        return Evidence(backend=self.name, initial_state={"said": []}, final_state={"said": list(self.said)})

    def close(self) -> None:
        pass


def judge_echo(task: Any, evidence: Evidence, answer: str) -> VerificationResult:
    """Every criterion passes when the answer repeats the last thing said (and something was said)."""
    said = evidence.final_state["said"] if isinstance(evidence.final_state, dict) else []
    passed = bool(said) and answer == said[-1]
    detail = f"echo judge: said {said!r}, answered {answer!r}"
    # a task may leave its checks to the judge: then the judge's own check is the one criterion
    results = [CriterionResult(c.id, passed, detail) for c in task.criteria] or [
        CriterionResult("echo", passed, detail)
    ]
    return VerificationResult(passed, results)


def said(e: Any, params: Mapping[str, Any]) -> tuple[bool, str]:
    """A state predicate: ``params["text"]`` was said."""
    return params["text"] in e.final.get("said", []), f"said {e.final.get('said')!r}"


class Misnamed(EchoBackend):
    name = "not-echo"


class Untrusted(EchoBackend):
    name = "untrusted"
    trust = "blind faith"  # type: ignore[assignment]
