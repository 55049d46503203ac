"""A pointer (copy) head for the tiny planner: inside a value the action is writing, the next token is drawn from
a mixture of the vocabulary and the tokens of the user turns already read, as in a pointer-generator network
(See et al., 2017). Optional (``TinyModelConfig.copy_head``, off by default; measured there).

The tiny model picks the right tool far more often than the right value: at a contact's first token its vocabulary
logits are nearly flat over capital letters, and the one it favours is some goal word, not the contact. A value is
mostly copied from the task, a tool result or a memory hit, and a copy is a choice of *position* ("the name after
'Pay'"), which the last layer's contextual states can express directly. So beside the LM head the model has one
attention head over the user turns before the turn being written; its weights, summed per token id, are a
distribution over the tokens it could copy, and a learned gate mixes it with the vocabulary's softmax:

    p(w) = (1 - g) * softmax(lm_head(h))[w] + g * sum_{j in user turns, x_j = w} attention_j

The mixture applies only while the turn's text stands inside a JSON string value whose key is not ``kind`` or
``name`` (``ValueLexer`` over the token pieces saved in the config); elsewhere ``p`` is the vocabulary's. ``logits``
are ``log p``: the softmax of them is ``p``, so greedy and temperature decoding, the copy bias, the constrained
decoder, the SFT loss and RL's log-probs all work on the mixture unchanged, and since the gate is read from the
token ids, training, decoding and RL see the same one. The copy keys and token ids of positions already decoded ride
on the KV cache object, so incremental decoding gives the same logits as one pass over the whole sequence (a test
checks it).

A checkpoint saves as model type ``planner_copy``; importing this module registers it with transformers' Auto
classes, which ``learner.model.factory.load_checkpoint`` does. It is the tiny model's architecture only: a Qwen
checkpoint a user brings stays a plain causal LM (vLLM serves those; it has no kernel for this head).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, Qwen3Config, Qwen3ForCausalLM
from transformers.modeling_outputs import CausalLMOutputWithPast

MODEL_TYPE = "planner_copy"
_FLOOR = 1e-9
"""Smallest probability a mixed token gets before the log (keeps ``log p`` and its gradient finite)."""


class CopyHeadConfig(Qwen3Config):
    model_type = MODEL_TYPE

    def __init__(
        self,
        copy_dim: int = 64,
        copy_turn_token_id: int | None = None,
        copy_source_role_ids: list[int] | None = None,
        copy_pieces: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        self.copy_dim = copy_dim
        self.copy_turn_token_id = copy_turn_token_id
        self.copy_source_role_ids = copy_source_role_ids or []
        self.copy_pieces = copy_pieces
        super().__init__(**kwargs)


class CopyHeadForCausalLM(Qwen3ForCausalLM):
    """Qwen3 with a pointer head: ``.model`` and ``.lm_head`` as in Qwen3, plus ``copy_query``, ``copy_key`` and
    ``copy_gate``; ``logits`` are the mixture's log-probabilities."""

    config_class = CopyHeadConfig

    def __init__(self, config: CopyHeadConfig) -> None:
        super().__init__(config)
        self.copy_query = nn.Linear(config.hidden_size, config.copy_dim, bias=False)
        self.copy_key = nn.Linear(config.hidden_size, config.copy_dim, bias=False)
        self.copy_gate = nn.Linear(config.hidden_size, 1)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        past_key_values: Any = None,
        inputs_embeds: torch.FloatTensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast:
        if input_ids is None:
            raise ValueError("the copy head copies token ids: pass input_ids, not inputs_embeds")
        outputs = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=past_key_values,
            use_cache=use_cache,
            **kwargs,
        )
        hidden = outputs.last_hidden_state
        cache = outputs.past_key_values
        keys, ids, valid = _memory(past_key_values, self.copy_key(hidden), input_ids, attention_mask)
        if cache is not None:
            cache.copy_memory = (keys, ids, valid)
        if isinstance(logits_to_keep, int) and logits_to_keep > 0:
            hidden = hidden[:, -logits_to_keep:]
        batch, length = hidden.shape[:2]
        positions = torch.arange(keys.shape[1] - length, keys.shape[1], device=hidden.device)
        sources = self.copyable(ids, valid, positions)
        logits = self.mixed_logits(
            hidden.reshape(batch * length, -1),
            self.copy_scores(hidden, keys).reshape(batch * length, -1),
            ids[:, None].expand(-1, length, -1).reshape(batch * length, -1),
            sources.reshape(batch * length, -1),
        ).view(batch, length, -1)
        loss = None
        if labels is not None:
            loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size, **kwargs)
        return CausalLMOutputWithPast(loss=loss, logits=logits, past_key_values=cache)

    def completion_logits(self, inputs: dict[str, Any], keep: torch.Tensor) -> torch.Tensor:
        """The mixture's log-probs at the next-token positions ``keep`` marks (batch x length-1) of one pass over
        ``inputs``: the SFT loss's logits, without the LM head or the copy mixture on the prompt's positions."""
        body = {k: v for k, v in inputs.items() if k in ("input_ids", "attention_mask", "position_ids")}
        hidden = self.model(**body).last_hidden_state
        input_ids, mask = inputs["input_ids"], inputs.get("attention_mask")
        keys, ids, valid = _memory(None, self.copy_key(hidden), input_ids, mask)
        queries = hidden[:, :-1]
        rows = keep.nonzero(as_tuple=True)[0]
        positions = torch.arange(queries.shape[1], device=hidden.device)
        sources = self.copyable(ids, valid, positions)
        return self.mixed_logits(queries[keep], self.copy_scores(queries, keys)[keep], ids[rows], sources[keep])

    def copy_scores(self, hidden: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Scaled dot products of the queries of ``hidden`` (batch x T) with ``keys`` (batch x S): batch x T x S."""
        query = self.copy_query(hidden)
        return torch.bmm(query, keys.transpose(1, 2)).float() / math.sqrt(query.shape[-1])

    def copyable(self, ids: torch.Tensor, valid: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """batch x T x S: the positions the query at each of ``positions`` copies from (``copy_sources``), where the
        gate lets it copy at all (``copy_gate_open``)."""
        return self.copy_sources(ids, valid, positions) & self.copy_gate_open(ids, positions)[:, :, None]

    def copy_sources(self, ids: torch.Tensor, valid: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """batch x T x S: which positions the query at each of ``positions`` may copy from.

        With a ``copy_turn_token_id`` (``<|im_start|>``): the turns before the one being written (copying its own
        output only loops on what the model just wrote) and, with ``copy_source_role_ids`` (the first token of a
        role's name, ``user``), only turns of those roles: the task, tool results and memory hits carry the values;
        the system turn carries tool names and keys the vocabulary writes better. Without a turn token, every
        position up to the query's own."""
        span = torch.arange(ids.shape[1], device=ids.device)
        turn = self.config.copy_turn_token_id
        if turn is None:
            limit = positions[None, :].expand(ids.shape[0], -1) + 1
            return (span[None, None, :] < limit[:, :, None]) & valid[:, None, :]
        opens = ids == turn
        starts = torch.where(opens, span, torch.zeros_like(span)).cummax(dim=1).values
        source = valid & opens.gather(1, starts)  # inside some turn
        if self.config.copy_source_role_ids:
            role = ids.gather(1, (starts + 1).clamp(max=ids.shape[1] - 1))
            source &= torch.isin(role, torch.tensor(self.config.copy_source_role_ids, device=ids.device))
        return (span[None, None, :] < starts[:, positions][:, :, None]) & source[:, None, :]

    def copy_gate_open(self, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """batch x T: whether the token after each of ``positions`` may be copied. With ``copy_pieces`` (each token's
        text) and a turn token: only inside a JSON string value of the turn being written whose key is not ``kind``
        or ``name`` (a call's arguments, a memory query, an answer, a sub-agent's goal), read from the text so far.
        Elsewhere (braces, quotes, keys, tool names) the vocabulary alone writes the token: trained without the
        gate, the head also copied quotes and keys from the JSON of tool results, the vocabulary stopped learning
        the action's syntax and outputs looped on copied passages (twice the unparsable dev steps). Without pieces,
        everywhere."""
        pieces, turn = self.config.copy_pieces, self.config.copy_turn_token_id
        if not pieces or turn is None:
            return torch.ones((ids.shape[0], positions.shape[0]), dtype=torch.bool, device=ids.device)
        wanted = set(positions.tolist())
        first = int(positions.min())
        gate = torch.zeros((ids.shape[0], ids.shape[1]), dtype=torch.bool)
        for row, tokens in enumerate(ids.tolist()):
            opens = [i for i, token in enumerate(tokens) if token == turn]
            lexer = ValueLexer()
            start = opens[-1] if opens else len(tokens)
            for index in range(start + 1, len(tokens)):
                lexer.feed(pieces[tokens[index]] if tokens[index] < len(pieces) else "")
                if index >= first and index in wanted:
                    gate[row, index] = lexer.in_value()
        return gate[:, positions.cpu()].to(ids.device)

    def mixed_logits(
        self, hidden: torch.Tensor, scores: torch.Tensor, ids: torch.Tensor, sources: torch.Tensor
    ) -> torch.Tensor:
        """``log p`` for N query states ``hidden`` (N x hidden), with their copy ``scores`` over S positions holding
        token ``ids`` (N x S each) and the ``sources`` they may copy from; a query with none uses the vocabulary."""
        vocab = torch.softmax(self.lm_head(hidden).float(), dim=-1)
        attention = torch.softmax(scores.masked_fill(~sources, float("-inf")), dim=-1).nan_to_num(0.0)
        copied = torch.zeros_like(vocab).scatter_add_(-1, ids, attention)
        gate = torch.sigmoid(self.copy_gate(hidden).float()) * sources.any(-1, keepdim=True)
        return torch.log(((1 - gate) * vocab + gate * copied).clamp_min(_FLOOR))


class ValueLexer:
    """Reads JSON-ish text a piece at a time and says whether it stands inside a string value, and whose."""

    def __init__(self) -> None:
        self.in_string = self.escaped = self.is_value = False
        self.text = self.key = ""
        self.last = ""
        """The last character outside a string other than whitespace."""

    def feed(self, piece: str) -> None:
        for char in piece:
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif char == "\\":
                    self.escaped = True
                elif char == '"':
                    self.in_string = False
                    if not self.is_value:
                        self.key = self.text
                    self.last = '"'
                else:
                    self.text += char
            elif char == '"':
                self.in_string, self.is_value, self.text = True, self.last == ":", ""
            elif not char.isspace():
                self.last = char

    def in_value(self) -> bool:
        return self.in_string and self.is_value and self.key not in ("kind", "name")


def _memory(
    cache: Any, keys: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Copy keys, token ids and validity of every position read so far: the cache's, then this call's."""
    length = input_ids.shape[1]
    valid = (
        torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None else attention_mask[:, -length:].bool()
    )
    before = getattr(cache, "copy_memory", None) if cache is not None else None
    if before is None:
        return keys, input_ids, valid
    old_keys, old_ids, old_valid = before
    return torch.cat([old_keys, keys], 1), torch.cat([old_ids, input_ids], 1), torch.cat([old_valid, valid], 1)


def register() -> None:
    """Make ``AutoModelForCausalLM.from_pretrained`` load ``planner_copy`` checkpoints (idempotent)."""
    try:
        AutoConfig.register(MODEL_TYPE, CopyHeadConfig)
        AutoModelForCausalLM.register(CopyHeadConfig, CopyHeadForCausalLM)
    except ValueError:  # already registered
        pass


register()
