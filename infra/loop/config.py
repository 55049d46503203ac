"""What one run of the loop does: rounds, rollouts, training, dev evaluation and harness revision settings."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from learner.config import LearnerConfig

# The consumers of one loop, in the order the in-process loop steps them (upstream first).
CONSUMER_NAMES = (
    "round_controller",
    "reweighter",
    "task_constructor",
    "verifier",
    "diagnoser",
    "curator",
    "trainer",
    "dev_evaluator",
    "harness_reviser",
)


def loop_learner() -> LearnerConfig:
    """The learner of the main job: training spread over the rounds — a cold start in round 0 (1,200 SFT steps),
    then SFT continued from the best model in every later round (200 steps, ``continued_sft``), the rounds together
    one LR schedule of 1,600 steps (``LoopConfig.one_schedule``), where each example of the model's own admitted
    episodes counts up to 8 times (``self_weight``), and less where they would be more than a tenth of the trained
    rows (``self_share``): 47 own examples of 3,179 are then about 11% of the rows instead of 1.5%, the rest being
    the demonstrations again, and 300 own examples count once (weighted 8 they were 45% of the rows).

    Measured on 2 cores (2026-12-01): with 600 + 400 steps the model solved 0/64 new instances in rounds 1 and 2,
    so nothing of its own was admitted. Offline, one cold start (288 demos, actions in the documented order, copy
    bias 7; 2026-12-02): 600 steps 108/324 exact dev reference steps, dev 0.025; 1,200 steps 125, dev 0.119;
    1,800 steps 122, dev 0.056. At ff5de48 the main job went 0.062 -> 0.113 -> 0.144 dev, test 0.113.
    Continued SFT, paired main-job runs (seed 0, dev spread over all 32 templates, 2026-12-04): 500 steps at 1e-3,
    self weight 1: dev 0.131 -> 0.100 -> 0.094 in 17.9 min; 200 steps, weight 8: 0.131 -> 0.094 -> 0.094 in
    14.4 min; 200 steps at 3e-4, weight 8: round 1 0.081. Every continued run loses a little of the cold start's
    dev (more epochs over the same demonstrations); the shorter one loses no more and saves 3.5 min.
    Tried 2026-12-06: a cold start of 1,000 instead of 1,200 steps (the main job's round-0 datasets, value-weighted;
    349 teacher-forced dev reference steps, 64 dev + 64 test tasks). Seed 0: 124 vs 121 exact steps, dev 0.069 vs
    0.050, test 0.038 both; seed 1: 117 vs 123, dev 0.044 vs 0.081, test 0.031 vs 0.069 (the wake-alarm template
    lost on both splits). It saves a sixth of round 0's training (about 1.5 min of the run; the full run at 1,000
    took 15.4 min, dev 0.069 -> 0.031 -> 0.069, test 0.081) but is no better over the two seeds, so 1,200 stays.
    With value slots (``learner.model.value_slots``; seed 0, 2026-12-06, 18.4 min, round 0 679 s): dev 0.206 ->
    0.206 -> 0.231 with every category above 0 in every round, 20 and 22 of the model's own episodes admitted in
    rounds 1 and 2, test 0.238 (the same day without slots: dev 0.050 flat, 6 and 7 admitted, test 0.069). With
    composed values holding slots too (17.3 min, round 0 564 s): dev 0.294 -> 0.294 -> 0.294, 23 and 24 own
    episodes admitted, test 0.275; SFT for the same 1,608 steps on the demonstrations alone, test 0.269
    (``bench/flywheel_ablation.py``'s sft-only arm, same seed and day); each round's model on test 0.200 -> 0.206 ->
    0.275. Seed 1 (``--seed 1``, 16.3 min): dev 0.231 -> 0.213 -> 0.213, 22 and 20 admitted, test 0.263 (round 0's
    model), each round's model on test 0.263 -> 0.256 -> 0.231: the later rounds are not reliably better. With the
    task's words and numbers as slots too (``LearnerConfig.word_slots``; seed 0, 18.0 min, round 0 603 s): dev 0.294
    -> 0.300 -> 0.344, 30 and 24 own episodes admitted, test 0.344 (round 2's model); each round's model on test
    0.381 -> 0.369 -> 0.344: dev rose each round while test fell, so the rise is not yet learning that carries.
    Each continued round's model was merged with its parent at 0.5 (``parent_merge``). Measured 2026-12-07 on a
    default run's checkpoints (seed 0, no merge; the whole dev and test splits, 128 tasks each): round 0's model dev
    0.354 / test 0.390, round 1's 0.371 / 0.354, round 2's (from round 1's) 0.380 / 0.363: each continued run
    solved new templates (ride_or_transit, share_eta) and forgot others (workout_playlist 4 -> 0 of 4 on test,
    share_photos 3 -> 0). Merged at 0.5: rounds 0 + 1 0.419 / 0.402, rounds 1 + 2 0.412 / 0.409, above both
    parents on both splits (0.3 of round 1: 0.387 / 0.409; 0.7: 0.390 / 0.382). The main job with the merge (same
    seed and machine): dev 0.369 -> 0.463 -> 0.356 on its 64 tasks, test 0.388 (planner/2) against 0.369 -> 0.419
    -> 0.381 and 0.350 without; on the whole splits each round's model 0.354 / 0.390 -> 0.419 / 0.402 -> 0.347 /
    0.395 (dev / test) against 0.354 / 0.390 -> 0.371 / 0.354 -> 0.380 / 0.363: the continued rounds no longer lose
    test, but round 2 (continued from the merged round 1) fell on dev, so dev does not yet rise every round. In
    ``bench/flywheel_ablation.py``'s loop arm (seed 0, the same code in another process, other float results) the
    merged rounds were level with round 0 on the whole splits (dev / test 0.355 / 0.396 -> 0.341 / 0.388 -> 0.359 /
    0.369), and over seeds 0 and 1 the loop's test was level with SFT-only's (paired -0.000 [-0.078, +0.081]).
    The merge is off since the rounds train one schedule (2026-12-07, ``LoopConfig.one_schedule``, measured there):
    the continued rounds train at the schedule's low end (0.16 to 0 of the peak) instead of restarting at 1e-3."""
    base = LearnerConfig()
    return base.model_copy(
        update={
            "sft": base.sft.model_copy(update={"max_steps": 1200}),
            "continued_sft": base.continued_sft.model_copy(update={"max_steps": 200}),
            "self_weight": 8.0,
            "self_share": 0.1,
        }
    )


class LoopConfig(BaseModel):
    """Defaults are sized for the embedded default on 2 CPU cores: 3 rounds in about 15 minutes (13.7-15.1 min on
    2026-12-05; 17-18 min on 2026-12-06, when the machine trained a quarter slower; training is about 70% of it;
    17.1 min with two rollout workers on 2026-12-07, ``rollout_workers``; 11.0-12.0 min on the machine of a later
    session the same day, where round 0 trained 1,200 steps in 375 s instead of 434-484 s)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rounds: Annotated[int, Field(ge=1, le=100)] = 3
    first_round_rollouts: Annotated[int, Field(ge=1)] | None = 576
    """The demonstration budget: round 0 runs the reference solver (the cold start) on this many train-pool
    instances, drawn at random across every template (each task at most once; ~18 of a template's 36). The
    rest of the pool is new to the model; None = every train task once (nothing left to learn on its own).
    Half the pool rather than a quarter: with 288 demos the cold start memorises them (SFT loss 0.037 after 12
    epochs). The main job, same code, two seeds each (2026-12-03, one torch thread per run):
    288 demos, seed 0: dev 0.031 -> 0.031 -> 0.031, test 0.000; seed 1: 0.081 -> 0.056 -> 0.081, test 0.144.
    576 demos, seed 0: dev 0.087 -> 0.113 -> 0.119, test 0.144; seed 1: 0.181 -> 0.181 -> 0.181, test 0.175.
    About 4% more wall time (20.0 -> 20.8 and 20.7 -> 21.0 min at one thread)."""
    rollouts_per_round: Annotated[int, Field(ge=1)] = 64
    """Later rounds run the round's model on train tasks; its verified successes join the training data."""
    rollout_temperature: Annotated[float, Field(gt=0)] | None = None
    """Sampling temperature of the model's rollouts in later rounds (None: greedy, as the dev evaluation decodes).
    Measured in the main job (2026-12-02, before the draw was seeded by the round: each run drew other instances):
    greedy solved 8 and 8 of 64 in rounds 1-2 (10 and 11 in another run); 0.7 solved 14 and 12, admitted 14 and 10,
    but dev stayed 0.050 in every round (test 0.056), so greedy stays the default. Again 2026-12-06 (seed 0, 128
    rollouts a round at 1.0 against the default 64 greedy, same round 0): solved 14 and 8 of 128 (greedy 7 and 10 of
    64), admitted 12 and 8 (5 and 8); dev 0.081 -> 0.081 -> 0.100 (round 2: 1 task won, 1 lost) against 0.081 in
    each round, test 0.056 against 0.081, 16.9 against 15.8 min. A greedy success adds nothing the model does not
    already do (each round's model solved the same dev tasks as the one before); the sampled ones were mostly (9 of
    12, 5 of 8) of the three templates the model already solves on dev, and the rest (train instances of templates
    it solves none of on dev) did not carry over to dev (``RoundRow.admitted_self_templates``)."""
    failure_retries: Annotated[int, Field(ge=0, le=16)] = 2
    """Later rounds retry each train rollout the model failed this many times, sampled at ``retry_temperature``
    (``RoundConfig.failure_retries``): a greedy success is something the model already does, a retry that succeeds
    is a task it does not solve yet, verified, and it joins the training data like any own success. 0: none.
    Measured offline (2026-12-06, the seed-0 cold start, 192 train instances it was not shown): greedy solved 94;
    three samples at 0.8 of each of the 98 failures solved 9, 9 and 6, 16 tasks in all, of templates the greedy
    model solves none of on dev among them (cheapest_hotel_two_cities, hotel_prefs, usual_order, settle_requests).
    A retry's seed follows the run's seed, the round and the task, so a run with retries repeats exactly: the
    seed-0 main job twice (2026-12-06, run ids retry-ra and retry-rb): both times retries solved 3/54 and 3/70,
    admitted 32 and 21 own episodes, dev 0.294 -> 0.344 -> 0.431, test 0.363 (17.5 and 18.4 min). The same job
    without retries: dev 0.294 -> 0.300 -> 0.344, test 0.344 (17.6 min); seed 1 (before the seeds repeated),
    with: dev 0.344 -> 0.369 -> 0.412, test 0.463; without: 0.344 -> 0.369 -> 0.338, test 0.431. With retries dev
    rose every round on both seeds (without, on seed 0 only) and ended higher (0.431 vs 0.344, 0.412 vs 0.338), and
    test was not lower; the test differences (+0.02, +0.03) are within the noise of 64 tasks, which is why
    ``bench/flywheel_ablation.py --seeds`` exists. On by default since then; ``--retries 0`` turns them off."""
    retry_temperature: Annotated[float, Field(gt=0)] = 0.8
    seed: int = 0
    """Seed of the train rollout draw: which train tasks round 0's cold start demonstrates and which each later
    round rolls out (and their seeds). The same seed reproduces a run's draw; another draws anew, to average a
    loop's figures over draws. 0 draws as before the seed existed. The dev and test splits and the train pool do
    not depend on it, so figures stay comparable across seeds; nor do the training seeds and GRPO's own task draw
    (``learner``)."""
    rollout_workers: Annotated[int, Field(ge=1, le=16)] = 2
    """Rollout workers of the run (group ``flywheel.rollout-worker``): a model's episode decodes on one core
    (``PlannerPolicy.inference_threads``), so one worker leaves the other core of a 2-core machine idle through every
    rollout, retry and dev evaluation. In process, the loop steps worker 0 itself and runs the others as processes
    (``infra.loop.workers``); with ``--spawn-consumers``, ``flywheel consume rollout-worker --workers N``. The Kafka
    broker-restart fault test (tests/faults/test_broker_restart_round.py) runs that path with two: its first runs
    with two found a worker whose position went back to the group's commit after the restart re-running requests
    it had finished (one episode verified twice), and a verifier dead-lettering episodes as "topic does not
    exist" while its reader's metadata was empty; both fixed (``producers.rollout.worker``, ``infra.bus.kafka``),
    then three runs in a row passed, each with 16 redelivered requests found complete. An episode
    does not depend on the worker that runs it (its seed is in the request), so the figures stay the same.
    Measured on the main job (seed 0, 2026-12-07, the same figures to the episode, dev 0.294 -> 0.344 -> 0.431, test
    0.363): one worker, rounds 531 / 237 / 234 s, 17.5 min; two, 568 / 195 / 199 s, 17.1 min, where round 0
    trained 484 s against 434 s (the machine's training speed varies by a tenth from run to run). In round 1 the
    rollouts and retries took 67 -> 42 s, the dev evaluation 32 -> 25 s, the revision's A/B 32 -> 23 s, round 0's dev
    evaluation 45 -> 29 s: about 1.5 min of the job at equal training speed. Less than half, not half: worker 0
    also steps every consumer, and the other waits for each new version (download, load)."""
    external_suites: tuple[str, ...] = ()
    """Installed external suites (``flywheel suites list``, e.g. ``bfcl``) whose tasks join every dev evaluation
    (``dev_per_category`` of each), scored apart from the sandbox categories (``DevSetEvaluated.external``) and
    never part of Overall; their backends must be installed plugins."""
    first_policy: str = "scripted:reference"
    min_admitted_for_training: Annotated[int, Field(ge=1)] = 16
    algorithm: Literal["sft", "rl", "mixed"] = "sft"
    """After round 0 (SFT from scratch): ``sft`` continued SFT on admitted data; ``rl`` GRPO with CARE on
    rollouts through the bus (``learner.rl.steps_per_round`` steps); ``mixed`` continued SFT then GRPO in one
    training run (``learner.rl.sft_steps``, or ``continued_sft.max_steps`` when 0). Measured on the main job (seed 0,
    2026-12-05, before generated worlds named new entities): ``mixed`` dev 0.131 -> 0.094 -> 0.081 (4 GRPO steps a
    round; 11/64 and 6/64 RL episodes solved; CARE chose partial_credit) against ``sft`` 0.131 -> 0.094 -> 0.094,
    test 0.056 for both (the cold start was the best by dev), 13.9 vs 13.4 min. With value slots (seed 0,
    2026-12-06, ``bench/flywheel_ablation.py --algorithm mixed``): ``mixed`` dev 0.294 -> 0.294 -> 0.269 (21/64 and
    10/64 RL episodes solved, CARE partial_credit), test 0.206, 17.5 min; ``sft`` dev 0.294 flat, test 0.275; SFT
    on the demonstrations alone, test 0.269. So ``sft`` stays the default."""
    auto_approve: tuple[str, ...] = (
        "add_instruction",
        "set_budgets",
        "set_memory_policy",
        "set_tool_note",
        "set_tool_selection",
        "add_tool_successors",
    )
    """Harness change kinds published without a human review (the rest wait for ``flywheel review``). A published
    revision still reaches ``@production`` only through the dev evaluator's paired A/B against its parent."""
    revise_harness: bool = True
    learner: LearnerConfig = Field(default_factory=loop_learner)
    one_schedule: bool = True
    """With ``algorithm`` sft: the rounds' SFT runs train one LR schedule between them
    (``LearnerConfig.schedule_rounds``), as long and at the same rates as one SFT run of all their steps, so the
    loop and ``bench/flywheel_ablation.py``'s SFT-only arm train alike and differ in their data: the model's own
    episodes (and which round's model the loop picks by dev). A round continued from an earlier model than the last
    (the best by dev) still trains its own span: round 2 from round 0's model skips round 1's.
    Measured 2026-12-07 (the main job, one machine, against the restarted schedules merged with their parent at
    0.5 and every own example weighted 8): seed 0, one schedule with weight 8, dev 0.544 -> 0.456 -> 0.531, test
    0.456 (round 0's model); with ``self_share`` 0.1 as well (own examples x1.9 in round 1, x1.1 in round 2), dev
    0.544 -> 0.481 -> 0.525, test 0.456 (round 0's model), 14.8 min; seed 1, dev 0.488 -> 0.538 -> 0.562,
    test 0.469 (round 2's model), 13.6 min; seed 2, dev 0.450 -> 0.488 -> 0.494, test 0.531 (round 2's), 14.7 min.
    The restarted schedules with the merge: seed 0 dev 0.487 -> 0.444 -> 0.550, test 0.463 (2026-12-07, a faster
    machine); seed 1 0.431 -> 0.394 -> 0.450, test 0.406 (before the runs repeated,
    ``harness_service.tools.selection.goal_successors``). Level within the noise of 64 tasks; the ablation's figures
    are in ``bench/flywheel_ablation.py``."""
    final_test: bool = True
    """Evaluate the best model by dev on the test split once, after the last round (``test_overall``)."""
    stall_timeout_s: Annotated[float, Field(gt=0)] = 600.0
    """Fail the run when the log has not grown for this long (a consumer is down or an input is missing)."""
    out_dir: Path = Path("runs")

    @model_validator(mode="after")
    def _schedule_has_steps(self) -> LoopConfig:
        sft, continued = self.learner.sft.max_steps, self.learner.continued_sft.max_steps
        if self.one_schedule and self.algorithm == "sft" and (sft <= 0 or (self.rounds > 1 and continued <= 0)):
            raise ValueError("one_schedule needs max_steps > 0 in learner.sft and learner.continued_sft")
        return self

    def trainer_learner(self) -> LearnerConfig:
        """The learner settings the trainer runs with (``mixed``: continued-SFT steps before the GRPO steps;
        ``one_schedule``: the rounds' SFT spans one schedule)."""
        learner = self.learner
        if self.one_schedule and self.algorithm == "sft":
            learner = learner.model_copy(update={"schedule_rounds": self.rounds})
        if self.algorithm != "mixed" or learner.rl.sft_steps > 0:
            return learner
        rl = learner.rl.model_copy(update={"sft_steps": learner.continued_sft.max_steps})
        return learner.model_copy(update={"rl": rl})

    def round_env(self) -> dict[str, str]:
        """The round controller's settings as the FLYWHEEL_ROUND_* variables a consumer process reads."""
        return {f"FLYWHEEL_ROUND_{k.upper()}": str(v) for k, v in self.round_settings().items()}

    def round_settings(self) -> dict[str, Any]:
        return {
            "max_rounds": self.rounds,
            "min_admitted_for_training": self.min_admitted_for_training,
            "model_name": self.learner.model_name,
            "algorithm": "rl" if self.algorithm == "mixed" else self.algorithm,
            "planned_rollouts": self.rollouts_per_round,
            "await_harness_revision": self.revise_harness,
            "seed": self.seed,
            "failure_retries": self.failure_retries,
            "retry_temperature": self.retry_temperature,
            **({} if self.rollout_temperature is None else {"rollout_temperature": self.rollout_temperature}),
        }


PROFILES = ("quick", "full")


def profile(name: str) -> LoopConfig:
    """``quick`` (the default ``make run``): 3 rounds, about 15 min on 2 quiet cores (17-18 min on 2026-12-06 while
    the machine trained a quarter slower; about 70% of it training); every mechanism runs (rollouts on instances the
    model was not shown, admission of its own successes, new tasks, revisions). Seed 0, 2026-12-06: its model solves
    37 and 29 of 64 train rollouts in rounds 1 and 2 and 3 of 54 and 3 of 70 sampled retries of its failures; 32 and
    21 of its own episodes are admitted and trained on; dev over all 32 templates 0.294 -> 0.344 -> 0.431 with
    every category above 0 by the last round, test 0.363 (``loop_learner`` has the history; ``failure_retries``
    the same job without retries). Seed 0 on a faster machine (2026-12-07, with ``parent_merge``): 38 and 35 of 64
    rollouts and 2 of 52 and 5 of 58 retries solved, 33 and 28 own episodes admitted, dev 0.369 -> 0.463 -> 0.356
    (every category above 0 in every round), test 0.388, 11.0 min. With the procedure prior ranked for the goal
    (``harness_service.config.ProcedurePrior``, 2026-12-07, same machine): 35 and 26 of 64 rollouts and 11 of 58
    and 6 of 76 retries solved, 36 and 27 own episodes admitted, dev 0.425 -> 0.469 -> 0.487, test 0.387; seed 1
    0.356 -> 0.388 -> 0.375, test 0.362 (against 0.387 -> 0.406 -> 0.425, test 0.506 with the fixed table). On
    the whole splits (128 dev / 128 test tasks) the cold start gained on both seeds (round 0's model, seed 0: dev
    0.354 -> 0.404, test 0.348 -> 0.374; seed 1: 0.315 -> 0.396, 0.325 -> 0.359), the run's best model by dev
    less (seed 0: 0.419 / 0.381 -> 0.422 / 0.371; seed 1: 0.354 / 0.396 -> 0.395 / 0.351). With constrained
    action decoding on (``LearnerConfig.constrained_actions``, seed 0, 2026-12-07, 12.8 min against 10.6 min the
    same day without): 40 and 33 of 64 rollouts and 5 of 48 and 2 of 62 retries solved, 39 and 29 own episodes
    admitted, dev 0.569 -> 0.531 -> 0.594, test 0.500 (round 2's model; 0.456 without); on the whole splits each
    round's model dev 0.540 -> 0.510 -> 0.540, test 0.525 -> 0.484 -> 0.499: the continued rounds still add
    nothing on the whole test split. On a slower machine (an AMD EPYC, 2026-12-08: training a third slower, other
    float results) with dates held to their pattern (``learner.model.constrained.FORMAT_PATTERNS``): 17.5 min, 40
    and 36 of 64 rollouts and 3 of 48 and 3 of 56 retries solved, 37 and 32 own episodes admitted, dev 0.625 ->
    0.625 -> 0.619, test 0.531 (round 1's model); on the whole splits dev 0.581 -> 0.583 -> 0.588, test 0.534 ->
    0.554 -> 0.518 (each round's model; won / lost against the previous, dev 5/6 and 5/3, test 10/8 and 6/11).
    ``full``: 5 rounds, a larger train pool, more SFT steps and rollouts (about an hour on 2 cores)."""
    if name == "quick":
        return LoopConfig()
    if name == "full":
        base = LoopConfig().learner
        learner = base.model_copy(
            update={
                "cold_start_seeds": 3,
                "sft": base.sft.model_copy(update={"max_steps": 1500}),
                "continued_sft": base.continued_sft.model_copy(update={"max_steps": 1000}),
            }
        )
        return LoopConfig(rounds=5, first_round_rollouts=864, rollouts_per_round=192, learner=learner)
    raise ValueError(f"unknown profile {name!r}; one of {', '.join(PROFILES)}")
