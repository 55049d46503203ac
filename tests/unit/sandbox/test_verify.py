"""Verifier building blocks: answer matching, state predicates, collateral detection."""

from __future__ import annotations

import pytest

from bus_schemas.events.tasks import AnswerCriterion, NoCollateralCriterion
from producers.backends.sandbox.verify import PREDICATES, check_answer, check_collateral, matches

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("match", "expected", "given", "ok"),
    [
        ("exact", ["Lisbon"], "Lisbon", True),
        ("exact", ["Lisbon"], "lisbon", False),
        ("normalized", ["Lisbon"], " lisbon! ", True),
        ("contains", ["Lisbon"], "It is Lisbon, clearly", True),
        ("contains", ["Lisbon"], "Porto", False),
        ("numeric", ["21"], "about 21 °C", True),
        ("numeric", ["21"], "20", False),
        ("numeric", ["0"], "", False),
    ],
)
def test_answer_matching(match: str, expected: list[str], given: str, ok: bool) -> None:
    criterion = AnswerCriterion(id="a", description="-", expected=expected, match=match)  # type: ignore[arg-type]
    assert check_answer(criterion, given)[0] is ok


def test_where_operators() -> None:
    record = {"title": "Dinner with Ava", "attendees": ["c_1"], "amount": -12.5}
    assert matches(
        record,
        {"title__contains": "dinner", "attendees__has": "c_1", "amount__approx": -12.5, "attendees__set": ["c_1"]},
    )
    assert not matches(record, {"title": "dinner"})
    assert not matches(None, {"title": "x"})


def test_exists_with_new_ignores_records_that_already_matched() -> None:
    before = {"a": {"t": {"x": {"v": 1}}}}
    after = {"a": {"t": {"x": {"v": 1}, "y": {"v": 2}}}}
    exists = PREDICATES["state.exists"]
    assert not exists(before, before, {"path": "/a/t", "where": {"v": 1}, "new": True})[0]
    assert exists(before, after, {"path": "/a/t", "where": {"v": 2}, "new": True})[0]


def test_collateral_prefixes_are_path_segments() -> None:
    before = {"a": {"t": {"x": 1}, "tt": {"y": 1}}}
    after = {"a": {"t": {"x": 2}, "tt": {"y": 2}}}
    criterion = NoCollateralCriterion(id="c", description="-", allowed_paths=["/a/t"])
    ok, detail = check_collateral(criterion, before, after)
    assert not ok and "/a/tt/y" in detail
