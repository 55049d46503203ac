"""One settings object for the learner's jobs: model sizes, prompt window, harness version, SFT/RL/eval sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from harness_service.config import CompactContext, HarnessBudgets, HarnessConfig
from learner.model.factory import TinyModelConfig
from learner.model.lora import LoraSettings
from learner.procedure_prior import tiny_prior
from learner.rl.config import RlSettings
from learner.sft.config import SftSettings

TINY_INSTRUCTIONS = "You operate a user's phone apps through tools. One action per reply; finish when done."


CATEGORIES = ("tool_use", "memory", "skills", "sub_agent")


def tiny_harness() -> HarnessConfig:
    """The compact harness profile of the CPU model: short instructions and a compact system turn (the tools
    selected for each step as one line each, the loaded skill clipped, the action kinds in one line) that
    fits the window's ``system_tokens`` (p50 ~124 tokens of the 1,024-token BPE, measured on all 32 templates);
    observations show the result without the state changes and empty fields (``observations="result"``: a step
    is p50 44 tokens instead of ~90, so the window holds twice the recent steps).
    The step's tools start with the procedure prior (``learner.procedure_prior``): the tools that followed the last
    call in the train pool's reference solutions. With it the step lists the tool the reference calls for 214 of
    the dev split's 239 calls (test 211/236), without it 146 (142). Round-0 cold starts of the main job
    (2026-12-05): seed 0 dev 0.013 -> 0.050, test 0.000 -> 0.025; seed 1 dev 0.113 and test 0.056 with and without.
    Since 2026-12-07 the prior ranks the successors for each episode's goal (``ProcedurePrior``): on the whole dev
    split (no skill loaded) the step lists the reference's tool for 493 of 493 calls, against 424 with the two most
    frequent successors of each call (test 490 and 422 of 490).
    A step's observation ends with the worklist line (``CompactContext.worklist``): the next id of the newest list
    result no call has used yet. The newest turns hold less than one list result (six tracks with their fields are
    ~240 tokens), so the ids a skill works through scrolled out of the window; with the line, 91.3% of the values the
    dev split's reference actions copy are in the window, 85.3% without (448 tokens, model-free). With the worklist's
    own value slots (``learner.model.value_slots``) it moved the list templates from 4 to 22 of their 40 dev and test
    tasks (round-0 model, seed 0).
    At most 16 steps an episode: every reference solution of the suite takes 14 or fewer (measured over seeds
    0-2), and a small model's failed episodes otherwise run to the task's 20-40 steps, most of a round's time.
    A sub-agent's context is its parent's first context without the initial observation (a delegating parent hands
    over its goal word for word); the model blends the two (``"kind":"subagent_call"``). Tried 2026-12-04: a
    ``# Sub-task`` heading on the child's task turn, and no ``subagent_spawn`` on the child's action line. The
    blending stopped, but on paired cold starts dev went 0.163 -> 0.100 and 0.175 -> 0.156, test 0.075 -> 0.081 and
    0.125 -> 0.062, with sub_agent unchanged. Reverted.
    Tried 2026-12-04 on round-0 cold starts (main job, dev and test over all 32 templates): the step's tools before
    the loaded skill (a loaded skill's clipped body pushes a tool out of the 160-token head in 30% of the steps, train
    and dev alike): seed 0 dev 0.131 -> 0.094, test 0.056 -> 0.038. The initial observation without the goal it
    repeats (the current time at its end was cut from 36% of the dev steps' goal windows, 7% without): seed 0 dev
    0.131 -> 0.144, test 0.056 -> 0.100; seed 1 dev 0.088 -> 0.056, test 0.081 -> 0.031. Neither adopted: each
    change of the trained layout moves a cold start by about 0.05 either way."""
    return HarnessConfig(
        name="tiny-planner",
        instructions=TINY_INSTRUCTIONS,
        compact=CompactContext(observations="result", procedure=tiny_prior(), worklist=True),
        budgets=HarnessBudgets(max_steps=16),
    )


class LearnerConfig(BaseModel):
    """Small by default: the main job runs several rounds of cold start, RL and eval on two CPU cores."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_name: str = "planner"
    base_checkpoint: Path | None = None
    """A local checkpoint directory to start from (e.g. a Qwen3 model); None builds the tiny model. See
    ``for_base_model`` for the settings such a model needs."""
    lora: LoraSettings | None = None
    """Train LoRA adapters (peft) instead of every weight, in SFT and RL; checkpoints are saved merged."""
    chat_template: bool = False
    """Prompt with the tokenizer's own chat template (``PromptWindow.chat_template``) instead of ChatML."""
    native_tools: bool = False
    """With ``chat_template``: each step's tools also go to the template's ``tools`` in the checkpoint's own tool
    format (``PromptWindow.native_tools``), in training and decoding, as a server renders a request's ``tools``."""
    tiny: TinyModelConfig = Field(default_factory=TinyModelConfig)
    vocab_size: Annotated[int, Field(ge=300)] = 1024
    """Small, so names and values the model never saw still split into pieces it has produced; 1,024 rather than
    512 makes prompts a third shorter (2.8 vs 2.1 characters per token on the cold-start data)."""
    max_prompt_tokens: Annotated[int, Field(ge=32)] = 448
    """The window: ``system_tokens`` + ``goal_tokens`` + the newest turns. At 448 the newest turns get 160 tokens,
    and 12% of the string values the cold-start actions copy from their prompt are not in the window any more (an
    earlier step's list: the receipts to forward, the tracks to add, the other city's hotels; 8% at 576). Tried
    2026-12-06 at 576 (seed-0 round-0 dataset, 1,200 steps, against 448): 221 vs 233 exact teacher-forced dev
    reference steps (24 vs 11 unparseable), dev 0.344 vs 0.294, test 0.344 vs 0.381, 27% more training time."""
    max_new_tokens: Annotated[int, Field(ge=8)] = 96
    """64 cut the longest reference actions (e.g. ``clock.set_alarm`` with a list of days) before ``</action>``."""
    copy_bias: Annotated[float, Field(ge=0.0)] = 0.0
    """Decoding: logit bonus for tokens that continue a passage of the prompt inside a tool call's string argument
    (``learner.model.copy_bias``), saved with the checkpoint's window. 0 since the model writes copied values as
    value slots (``value_slots``): with slots, bias 7 gave 197 exact dev reference steps, dev 0.188, test 0.200, and
    bias 0 205, 0.206, 0.225 (the same checkpoint, 2026-12-06); 7 is the best bias without slots.
    Measured on one cold-start checkpoint (288
    demos, 1,200 steps, actions in the documented field order) over the 324 reference steps of the dev split
    (teacher-forced) and the 64 dev tasks: bias 0: 98 exact steps (keys sorted), 2.5: 114 exact, dev 0.000;
    5: 125, 0.087; 7: 125, 0.119; 10: 118, 0.144; 15: 118, 0.094. Above ~7 the bias copies passages past
    the value's end and outputs stop parsing (35 malformed at 5, 61 at 15); below it the model writes values it
    memorised from the train pools ("22:05" for the goal's "17:35", a train contact for a new one). Number values
    too (a begun number continues as one of the prompt's): on two seed-0 cold starts (576 demos) dev went 0.113 ->
    0.138 and 0.031 -> 0.056, each with its first skills tasks (focus_session's minutes: "30" memorised for "35").
    Tried 2026-12-05 on two cold starts with the procedure prior (seeds 0 and 1, 64 dev + 64 test tasks each): the
    same bonus for tool names, argument keys and skill names continuing into the ones the system turn lists cut the
    outputs that ended an episode as unusable by a quarter to a half (dev 48 -> 27 and 39 -> 29 episodes) but solved
    no more tasks, and the longer failing episodes made a dev evaluation up to 50% slower (22 -> 33 s); passages of
    the task turn only (not the system turn) as the source of a value: no more tasks either. At a string value's
    first token the model's own ranking is nearly flat over capital letters ("E" 9.1, "P" 8.2, "N" 7.2 for
    "Nora"), so the bias picks the first letter of some prompt word, not the one the goal means. Tried 2026-12-06
    (seed-0 cold start, the 449 string values of the 349 teacher-forced dev steps): each value chosen among the
    prompt's passages (1-5 words from a word boundary) and the greedy value by the model's own likelihood of the
    value and its closing quote. Greedy with this bias wrote 183 right; the highest total log-prob picked 84 (short
    passages win), the highest mean per token 142 (25 fixed, 66 broken). The likelihood does not single out the
    goal's entity either."""
    value_slots: bool = True
    """Candidate values of the prompt get slot tokens and the model writes a value it copies as its slot
    (``learner.model.value_slots``, measured there: on the main job's seed-0 round-0 dataset 205 vs 121 exact dev
    reference steps, dev 0.206 vs 0.050, test 0.225 vs 0.038; seed 1: 206 vs 123, dev 0.237 vs 0.081, test 0.219
    vs 0.069), saved with the checkpoint's window; the tokenizer
    gets the slot tokens (``learner.jobs.planner_tokenizer``). The tiny model's ChatML only."""
    word_slots: bool = True
    """With ``value_slots``, the task's content words are candidates too (``PromptWindow.word_slots``), so a value
    taken from the task's wording ("kettle", "who is my babysitter", "$61.67") is a slot. On the main job's round-0
    datasets (1,200 steps, 2026-12-06), against value slots alone: seed 0 dev 0.294 vs 0.294, test 0.381 vs 0.200;
    seed 1 dev 0.344 vs 0.231, test 0.450 vs 0.263 (the task's words without its numbers: dev 0.344 and 0.294,
    test 0.306 and 0.344)."""
    constrained_actions: bool = True
    """Greedy decoding keeps each action valid for the step's tools (``learner.model.constrained``; a value slot
    is read as the value it names), saved with the checkpoint's window; the in-process planner only (a vLLM server
    decodes freely). On the main job's round-0 model (seed 0, whole splits of 128 tasks, 2026-12-07): dev 0.479 ->
    0.540, test 0.483 -> 0.525, no task lost on either split (9 and 6 won), sub_agent 0.18 -> 0.29 on both; an
    evaluation took 63 s instead of 41 s. Off until then: measured on the cold starts of 2026-12-03 (dev 0.00 to
    0.07), unusable outputs mostly became wrong valid actions, and value slots could not be constrained."""
    goal_tokens: Annotated[int, Field(ge=0)] = 128
    """The task turn's first tokens kept in every prompt (0: only the newest ``max_prompt_tokens``)."""
    system_tokens: Annotated[int, Field(ge=0)] = 160
    """The system turn's first tokens kept in every prompt (instructions, loaded skill, the step's tools...):
    what the harness builds reaches the model. 0 drops the system turn (the window of earlier versions).
    With the 1,024 BPE, first-step system turns of the cold-start data are p50 147 and p90 173 tokens, so 27%
    lose their tail (the action line, sometimes the last tool). This is why an ``add_instruction`` revision hurts
    the tiny model so much: its line (~22 tokens) goes after the instructions and pushes the tools out. Measured on one
    main-job checkpoint (planner/3 of a default run at 05f2d75, 64 dev tasks, 2026-12-04): no revision 0.206;
    "Before finish, check that every part of the goal is done." 0.031; the same line with ``system_tokens`` +24
    0.131, which is what +24 alone gives without the revision (0.131); the same line placed after the action line
    0.138. The line's content costs nothing. Its length costs everything, and any change of the trained layout
    costs about 0.07. Training at 192 instead (paired cold starts, 2026-12-04) did not help: dev 0.163 -> 0.138 and
    0.175 -> 0.175, test 0.075 -> 0.113 and 0.125 -> 0.062."""
    value_swaps: Annotated[int, Field(ge=0)] = 0
    """Value-swapped copies of each training example (``learner.dataset.augment``, random letters and digits of the
    value's shape). Off by default: on the same 288 cold-start demos and 800 steps, 2 swaps gave the same 91/324
    exact dev steps as none, but 0.082 vs 0.165 on 64 unseen train tasks, and 0.000 vs 0.031 dev with the copy bias;
    the model learned to write random-letter names instead of copying them. Swapping in the train pools' own
    words instead of random letters did not help either (77/324)."""
    harness: HarnessConfig = Field(default_factory=tiny_harness)
    sft: SftSettings = Field(
        default_factory=lambda: SftSettings(max_steps=800, learning_rate=3e-3, logging_steps=100, value_weight=4.0)
    )
    """Cold start: a fresh model. The tokens of an action's values weigh 4 times the rest of the output
    (``SftSettings.value_weight``). Measured 2026-12-05 on the main job's two round-0 datasets (seeds 0 and 1,
    1,200 steps), weight 1 -> 4: wrong values among the 349 teacher-forced dev reference steps 142 -> 130 and
    141 -> 125, exact steps 118 -> 127 and 127 -> 128; dev 0.050 -> 0.081 and 0.113 -> 0.113, test 0.025 -> 0.038
    and 0.056 -> 0.069; dev episodes ended by unusable outputs 48 -> 41 and 39 -> 25. The call's arguments only
    (not a memory query or an answer): seed 0 exact 132, wrong values 136, dev 0.050, test 0.038."""
    continued_sft: SftSettings = Field(
        default_factory=lambda: SftSettings(max_steps=600, learning_rate=1e-3, logging_steps=100, value_weight=4.0)
    )
    """SFT continued from a registered version (``run_sft(base_version=...)``), with the cold start's weighting."""
    schedule_rounds: Annotated[int, Field(ge=1)] | None = None
    """The rounds one LR schedule spans (``learner.sft.schedule``): the cold start trains the first ``sft.max_steps``
    steps of a warmup + cosine schedule of ``sft.max_steps + (schedule_rounds - 1) * continued_sft.max_steps`` steps
    at ``sft.learning_rate``, and the continued SFT of round r the r-th ``continued_sft.max_steps`` after them, so
    a loop's rounds together train as long, at the same rates, as one SFT run of that many steps. None: each run
    its own schedule (``continued_sft.learning_rate`` for continued runs). Set by the loop
    (``LoopConfig.one_schedule``)."""
    rl: RlSettings = Field(default_factory=RlSettings)
    self_weight: Annotated[float, Field(ge=0.0)] = 1.0
    """Weight of an example from the model's own admitted episodes, relative to a demonstration's (an example of
    weight w is trained on round(w) times, at least once)."""
    self_share: Annotated[float, Field(gt=0.0, lt=1.0)] | None = None
    """The most of the trained rows the model's own examples make up: ``self_weight`` is lowered (not below 1) where
    they would be more (``learner.dataset.build.own_multiplier``). None: ``self_weight`` whatever their number.
    The main job's own examples grew from 47 (2026-12-04) to 185-356 a round once its model solved half of its
    rollouts; weighted 8, they were 30-45% of the rows, most of them of templates it solved already. At 0.1 (one
    schedule, seed 0, 2026-12-07): round 1's model dev 0.481 against 0.456 at weight 8 (the same round 0), round 2's
    0.525 against 0.531, test 0.456 both (round 0's model)."""
    parent_merge: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0
    """SFT continued from a registered version ends by merging with it: each weight becomes ``(1 - p) * trained +
    p * parent`` (``learner.sft.merge``). 0: the trained weights as they are. The main job used 0.5 with a schedule
    restarted every round (``infra.loop.config.loop_learner``, measured there), and none since its rounds train one
    schedule (``LoopConfig.one_schedule``)."""
    train_categories: tuple[str, ...] = CATEGORIES
    max_difficulty: Annotated[int, Field(ge=1, le=3)] = 3
    cold_start_seeds: Annotated[int, Field(ge=1)] = 2
    """Task-suite seeds whose train split forms the train pool (18 instances per template and seed); the cold
    start demonstrates a part of it (``LoopConfig.first_round_rollouts``), the rest is new to the model."""
    dev_per_category: Annotated[int, Field(ge=1)] | None = 16
    """Dev and test tasks per category (None: the whole split), spread over the category's templates
    (``learner.eval.dev.pick_tasks``): 16 score each of the 32 templates once or twice. Figures recorded here
    before 2026-12-04 scored the 4 instances of each category's first 4 templates (difficulty 1-2) instead."""
    work_dir: Path = Path(".flywheel/learner")
    require_approval: bool = False

    def sft_settings(self, round: int, *, continued: bool) -> SftSettings:
        """The SFT settings of ``round``'s training (``continued``: from a registered version), with its span of the
        loop's schedule when ``schedule_rounds`` is set."""
        settings = self.continued_sft if continued else self.sft
        if self.schedule_rounds is None:
            return settings
        first, later = self.sft.max_steps, self.continued_sft.max_steps
        if first <= 0 or later <= 0:
            raise ValueError("schedule_rounds needs max_steps > 0 in sft and continued_sft")
        start = first + later * (round - 1) if continued else 0
        total = first + later * (self.schedule_rounds - 1)
        if continued and not 1 <= round < self.schedule_rounds:
            raise ValueError(f"round {round} is outside the schedule of {self.schedule_rounds} rounds")
        return settings.model_copy(
            update={
                "learning_rate": self.sft.learning_rate,
                "warmup_steps": self.sft.warmup_steps,
                "schedule_total": total,
                "schedule_start": start,
            }
        )


def for_base_model(config: LearnerConfig, checkpoint: Path, *, lora: LoraSettings | None = None) -> LearnerConfig:
    """``config`` set up for a checkpoint the user brings (``flywheel run --base-model``): the full default harness
    (not the tiny model's compact profile) with native function calls as the action syntax (the demonstrations
    write ``<tool_call>`` blocks, the format such a checkpoint's template was made for), prompts rendered with the
    checkpoint's own chat template and the step's tools in its own tool format (``native_tools``) in a
    4,096-token window, no copy bias, value slots or action constraint (it knows the ``<action>`` syntax only),
    an unweighted loss (``value_weight`` was measured on the tiny
    model only), and fine-tuning rates for a pretrained model (1e-5 full, 2e-4 LoRA)."""
    rate = 1e-5 if lora is None else 2e-4
    return config.model_copy(
        update={
            "base_checkpoint": checkpoint,
            "lora": lora,
            "chat_template": True,
            "native_tools": True,
            "harness": HarnessConfig(action_syntax="tool_call"),
            "max_prompt_tokens": 4096,
            "max_new_tokens": 256,
            "goal_tokens": 0,
            "system_tokens": 0,
            "copy_bias": 0.0,
            "value_slots": False,
            "constrained_actions": False,
            "sft": config.sft.model_copy(update={"learning_rate": rate, "value_weight": 1.0}),
            "continued_sft": config.continued_sft.model_copy(update={"learning_rate": rate, "value_weight": 1.0}),
            "rl": config.rl.model_copy(update={"learning_rate": rate / 10 if lora is None else rate / 4}),
        }
    )
