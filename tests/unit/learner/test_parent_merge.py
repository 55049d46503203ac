"""A continued run's weights merged with its parent's (``learner.sft.merge``)."""

from __future__ import annotations

import pytest
import torch

from learner.sft.merge import ParentMerge

pytestmark = pytest.mark.unit


class _Tied(torch.nn.Module):
    """An embedding shared with the output head, as the tiny planner ties them, and an integer buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(5, 3)
        self.head = torch.nn.Linear(3, 5, bias=False)
        self.head.weight = self.embed.weight
        self.norm = torch.nn.Linear(3, 3)
        self.register_buffer("steps", torch.tensor([7]))


def test_each_weight_becomes_the_interpolation_and_a_tied_weight_moves_once() -> None:
    torch.manual_seed(0)
    model = _Tied()
    merge = ParentMerge.of(model, 0.25)
    parent = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():  # what training would do: every weight moves, the integer buffer too
        for p in model.parameters():
            p.add_(1.0)
        model.steps += 1
    trained = {k: v.clone() for k, v in model.state_dict().items()}
    merge.apply(model)
    for name in ("embed.weight", "head.weight", "norm.weight", "norm.bias"):
        expected = 0.75 * trained[name] + 0.25 * parent[name]
        assert torch.allclose(model.state_dict()[name], expected), name
    assert model.head.weight is model.embed.weight
    assert model.steps.item() == 8  # not a weight: left as trained


def test_another_architecture_or_a_weight_outside_zero_one_is_refused() -> None:
    merge = ParentMerge.of(_Tied(), 0.5)
    with pytest.raises(ValueError, match="differ in weights"):
        merge.apply(torch.nn.Linear(3, 3))
    with pytest.raises(ValueError, match="must be in"):
        ParentMerge.of(_Tied(), 1.0)
    other = _Tied()
    other.norm = torch.nn.Linear(3, 3)
    reshaped = ParentMerge({**merge.state, "norm.weight": torch.zeros(2, 3)}, 0.5)
    with pytest.raises(ValueError, match="norm.weight"):
        reshaped.apply(other)
