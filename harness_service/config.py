"""The versioned harness configuration: instructions, skill library version, memory policy and budgets."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_INSTRUCTIONS = (
    "You are a planner agent operating a user's apps through tools. Work step by step: "
    "take exactly one action per reply, read the observation that comes back, and finish "
    "with a concise answer once the goal is met. Ask a clarifying question when the goal is "
    "ambiguous and refuse requests that are unsafe or impossible."
)


ActionSyntax = Literal["action", "tool_call"]


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HarnessBudgets(_Config):
    """Episode limits; a task's own budgets, when stricter, take precedence."""

    max_steps: Annotated[int, Field(ge=1)] = 30
    max_total_tokens: Annotated[int, Field(ge=1)] = 400_000
    """Input plus output tokens over all policy calls of the episode."""
    context_tokens: Annotated[int, Field(ge=256)] = 16_384
    """Budget of one rendered context; older turns are summarised to fit."""
    max_invalid_actions: Annotated[int, Field(ge=0)] = 3
    """Unparseable or schema-invalid outputs tolerated before the episode ends with ``error``."""
    max_subagent_depth: Annotated[int, Field(ge=0)] = 1
    max_output_chars: Annotated[int, Field(ge=1)] = 65_536
    """Longer model outputs are rejected with ``parse_error`` before any JSON parsing."""
    turn_chars: Annotated[int, Field(ge=64)] = 4000
    """Each history turn (model output or observation) is clipped to this many characters."""


class MemoryPolicy(_Config):
    """How the harness uses the user's memory."""

    enabled: bool = True
    retrieve_top_k: Annotated[int, Field(ge=0, le=50)] = 5
    """Memories retrieved with the goal as query and pinned into the context."""
    seed_from_task: bool = True
    consolidate_on_end: bool = False
    near_duplicate_threshold: Annotated[float, Field(gt=0.0, le=1.0)] = 0.85


class ProcedurePrior(_Config):
    """Which tool comes next, given the last call and the goal's words: counts drawn from solutions
    (``harness_service.tools.selection.fit_procedure``), ranked per episode by ``goal_successors``.

    A table of the most frequent successors (``CompactContext.tool_successors``) shows the same two tools after a
    call in every episode; after ``contacts.search_contacts`` that is ``messages.send`` whether the goal asks to text
    someone, count their unread messages or pay them. Here each tool that ever followed the call is scored by how
    often it did and by the goal's words (naive Bayes over the goals of the solutions that called it), so the step
    shows the successors this goal's solutions call."""

    follows: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Tool name (``""``: an episode's first call) -> each tool called right after it in solutions -> how often."""
    cues: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Tool name -> a goal word -> of the tool's counted calls, how many had a goal holding the word (rare words
    left out: a name seen in one solution says nothing about the next goal)."""
    shown: Annotated[int, Field(ge=1, le=8)] = 2
    """Successors shown first at the step after a call (each costs a line of the compact tool list)."""


class CompactContext(_Config):
    """A compact rendering of the system turn for small models (a harness profile, versioned like any other).

    Instead of every tool with its JSON Schema (4-8k tokens), each step shows ``tool_top_k`` tools, one line
    each (name, argument names, the harness's own note or the first ``tool_description_chars`` of its
    description): the tools that followed the last call in solutions (``procedure``, ranked for the goal, or the
    fixed ``tool_successors``), the loaded skill's tools and the tools already called first, then the best matches
    of the goal (BM25). The action kinds are one short line, loaded skills are clipped to ``skill_chars``.
    """

    tool_top_k: Annotated[int, Field(ge=0, le=64)] = 3
    tool_description_chars: Annotated[int, Field(ge=0, le=400)] = 0
    tool_notes: dict[str, str] = Field(default_factory=dict)
    """Tool name -> the line shown instead of its (clipped) description: a tool-description edit of this harness."""
    tool_successors: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Tool name -> the tools that followed it in solutions, most frequent first (``""``: the first call of an
    episode): a procedure prior drawn from traces (the reviser's ``add_tool_successors`` window edit). The step
    after a call shows them first, so a small model sees the tool it needs next even when the goal's words do
    not name it (``search_contacts`` before ``send_money``). An entry here overrides ``procedure``'s for its tool."""
    procedure: ProcedurePrior | None = None
    """The successors ranked for each episode's goal (``tool_successors`` entries take precedence); None: the
    ``tool_successors`` table alone."""
    action_format: Literal["full", "short"] = "short"
    skill_chars: Annotated[int, Field(ge=0, le=20_000)] = 160
    offer_skills: bool = True
    observations: Literal["full", "result"] = "full"
    """``result``: observations show the tool's result (or error) only, without the state changes it made (which
    repeat the result for most calls) and without empty fields: about half the tokens of a step."""
    worklist: bool = False
    """While the newest list result (records with ids: an artist's tracks, a folder's receipts) has ids no tool call
    has used since, each tool call's observation ends with the next of them and how many are left
    (``harness_service.context.worklist``): the list scrolls out of a small model's window, the id it needs next
    stays in view."""


class HarnessConfig(_Config):
    """One harness version. ``digest()`` names its content; the registry stores ``model_dump_json()``."""

    name: str = "default"
    instructions: str = DEFAULT_INSTRUCTIONS
    skill_library_version: str | None = None
    """The library digest this config was tuned with; ``None`` accepts any library."""
    memory: MemoryPolicy = Field(default_factory=MemoryPolicy)
    budgets: HarnessBudgets = Field(default_factory=HarnessBudgets)
    compact: CompactContext | None = None
    """A compact system turn (small models); ``None``: every tool with its full schema."""
    action_syntax: ActionSyntax = "action"
    """How the model is told to write its one action per reply, and how scripted policies (the reference solver's
    demonstrations) write it: ``action``, the project's ``<action>{json}</action>``; ``tool_call``, a native
    function call, ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` as Qwen/Hermes chat templates
    write one, for a checkpoint that brings its own tool-calling format (``flywheel run --base-model``), so its
    demonstrations train the format it was pretrained on and a server's tool parser reads its replies. The parser
    reads both, whatever this says."""

    def digest(self) -> str:
        """``sha256:<hex>`` of the canonical JSON form (without ``compact`` when unset, without an empty
        ``compact.tool_successors``, an unset ``compact.procedure`` or an unset ``compact.worklist`` and without the
        default ``action_syntax``, so versions made before those fields existed keep their digest)."""
        exclude: dict[str, Any] = {}
        if self.compact is None:
            exclude["compact"] = True
        else:
            unset = {"tool_successors"} if not self.compact.tool_successors else set()
            unset |= {"procedure"} if self.compact.procedure is None else set()
            unset |= set() if self.compact.worklist else {"worklist"}
            if unset:
                exclude["compact"] = unset
        if self.action_syntax == "action":
            exclude["action_syntax"] = True
        body = self.model_dump_json(exclude=exclude or None)
        return "sha256:" + hashlib.sha256(body.encode()).hexdigest()

    @classmethod
    def load(cls, path: Path) -> HarnessConfig:
        """Read a config written with ``model_dump_json()``."""
        return cls.model_validate_json(path.read_bytes())
