"""Builds the tiny CPU planner (Qwen3 architecture, random init) and saves/loads checkpoints with their tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field


class TinyModelConfig(BaseModel):
    """Sizes of the from-scratch model; the defaults train in minutes on two CPU cores."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hidden_size: Annotated[int, Field(ge=16)] = 128
    layers: Annotated[int, Field(ge=1)] = 2
    """Tried 2026-12-06 on the main job's seed-0 round-0 dataset (3,185 examples, value-weighted SFT, copy bias 7;
    349 teacher-forced dev reference steps, 64 dev + 64 test tasks), against 2 layers (0.5M parameters, 1,200 steps
    in 555 s: 121 exact steps, dev 0.050, test 0.038): 4 layers (0.9M), 1,200 steps in 903 s: 130 exact, dev 0.081,
    test 0.069 (one more alarm template solved on each split); 4 layers, 800 steps in 628 s (about the 2-layer
    run's time): 118 exact, dev 0.050, test 0.038. Depth helps only with the extra compute, so 2 stays."""
    heads: Annotated[int, Field(ge=1)] = 4
    kv_heads: Annotated[int, Field(ge=1)] = 2
    """Tried 2026-12-05: 8 heads of 16 dimensions (4 kv heads) instead, same parameters, on the default runs' round-0
    datasets (value-weighted SFT, 1,200 steps): seed 0 dev 0.081 -> 0.013, test 0.038 -> 0.000, exact dev reference
    steps 127 -> 117; seed 1 dev 0.113 and test 0.069 both ways, exact steps 128 -> 123. Not adopted."""
    intermediate_size: Annotated[int, Field(ge=16)] = 384
    max_positions: Annotated[int, Field(ge=64)] = 1024
    copy_head: bool = False
    """A pointer head beside the LM head (``learner.model.copy_head``): inside a value the action is writing, the
    next token may be copied from the user turns read so far (task, tool results, memory hits), mixed with the
    vocabulary by a learned gate. Off by default. Measured 2026-12-05 on the default runs' round-0 datasets
    (value-weighted SFT, 1,200 steps, copy bias 7; 349 teacher-forced dev reference steps, 64 dev + 64 test tasks).
    Plain head, seeds 0 / 1: exact steps 127 / 128, wrong values 130 / 125, unparsable 39 / 41, dev 0.081 / 0.113,
    test 0.038 / 0.069. This head (user turns, value gate): exact 118 / 115, wrong values 105 / 101, unparsable
    55 / 71, dev 0.075 / 0.094, test 0.062 / 0.069, training 17% slower. Seed 0 without the gate, every earlier turn
    a source: 114 exact, 95 wrong values, 90 unparsable (the head copied quotes and keys from tool results' JSON and
    looped), dev 0.087, test 0.075; user turns only: 123 exact, 90 wrong values, 83 unparsable, dev 0.087, test
    0.056. The pointer copies whole phrases right when it lands on them ("what time do I wake up on weekdays") but
    lands on the wrong passage about as often as the plain head picks a wrong word; 1,200 CPU steps do not make it
    precise. Tried 2026-12-06 on seed 0 (same dataset and settings), none adopted: a supervised copy loss (the
    gate's cross-entropy against "the next token is in a source" plus the pointer's log-likelihood of the positions
    holding it, weight 0.1): 118 exact, 95 wrong values, 83 unparsable; at weight 1 (with the next variant) it
    swamped the LM loss (61 exact, 161 unparsable); copying only tokens without a quote (this tokenizer merges most
    value ends with their quote): 85 exact, 95 wrong values, 115 unparsable; a learned bonus on the position after
    one holding the token just written (to continue a copied passage): 116 exact, 101 wrong values, 68 unparsable,
    and it still loops ("Bro Bro Bro")."""
    copy_dim: Annotated[int, Field(ge=8)] = 64
    """Width of the copy head's query and key."""
    seed: int = 0


def build_tiny_model(tokenizer: Any, config: TinyModelConfig | None = None) -> Any:
    """A Qwen3ForCausalLM (with ``copy_head``, a ``CopyHeadForCausalLM``) with random weights sized to
    ``tokenizer``; seeded, so reproducible."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from learner.model.copy_head import CopyHeadConfig, CopyHeadForCausalLM
    from learner.model.tokenizer import IM_START

    config = config or TinyModelConfig()
    torch.manual_seed(config.seed)
    sizes = dict(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        num_key_value_heads=config.kv_heads,
        head_dim=config.hidden_size // config.heads,
        intermediate_size=config.intermediate_size,
        max_position_embeddings=config.max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    if config.copy_head:
        copy = CopyHeadConfig(
            copy_dim=config.copy_dim,
            copy_turn_token_id=tokenizer.convert_tokens_to_ids(IM_START),
            copy_source_role_ids=[tokenizer.encode(f"{IM_START}user")[1]],  # the task, tool results, memory hits
            copy_pieces=[tokenizer.decode([i]) for i in range(len(tokenizer))],  # copies only inside values
            **sizes,
        )
        return CopyHeadForCausalLM(copy)
    return Qwen3ForCausalLM(Qwen3Config(**sizes))


def save_checkpoint(model: Any, tokenizer: Any, path: Path) -> Path:
    """Model and tokenizer side by side, loadable with ``local_files_only``; a LoRA model is saved merged (a copy:
    the adapters stay trainable)."""
    from learner.model.lora import plain_model

    path.mkdir(parents=True, exist_ok=True)
    plain_model(model).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def load_checkpoint(path: Path, device: str = "cpu", dtype: Any = None) -> tuple[Any, Any]:
    """(model, tokenizer) from a local directory (ours, or any Qwen3-style checkpoint a user has); never the hub."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import learner.model.copy_head  # noqa: F401  # registers the tiny model's copy-head architecture

    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} is not a checkpoint directory (no config.json)")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    options = {} if dtype is None else {"dtype": dtype}
    # transformers annotates .to() through a decorator that mypy reads as taking the model first
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **options).to(device)  # type: ignore[arg-type]
    return model, tokenizer
