"""Verifier building blocks: answer matching, state predicates, collateral detection."""

from __future__ import annotations

import pytest

from bus_schemas.events.tasks import AnswerCriterion, NoCollateralCriterion
from producers.backends import plugins
from producers.backends.base import Evidence
from producers.backends.sandbox.verify import EvidenceView, check_answer, check_collateral, matches
from producers.backends.sandbox.where import where_matcher

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


EVENT = {"title": "Dinner with Ava", "room": "B2", "attendees": ["c_1", "c_2"]}


@pytest.mark.parametrize(
    ("where", "ok"),
    [
        ({"not": {"room": "B2"}}, False),
        ({"not": {"room": "C3"}}, True),
        ({"any": [{"room": "C3"}, {"title__contains": "dinner"}]}, True),
        ({"any": [{"room": "C3"}, {"title__contains": "lunch"}]}, False),
        ({"any": []}, False),
        ({"all": [{"room": "B2"}, {"attendees__has": "c_2"}]}, True),
        ({"all": [{"room": "B2"}, {"attendees__has": "c_9"}]}, False),
        ({"any": [{"not": {"room": "B2"}}, {"all": [{"attendees__has": "c_1"}, {"not": {"title": "x"}}]}]}, True),
        ({"not": {"any": [{"room": "C3"}, {"all": [{"room": "B2"}, {"title__norm": "dinner with ava!"}]}]}}, False),
        ({"room": "B2", "not": {"attendees__set": ["c_2", "c_1"]}}, False),
    ],
)
def test_where_combinators_nest(where: dict, ok: bool) -> None:
    assert matches(EVENT, where) is ok


def test_a_field_named_like_a_combinator_is_matched_with_eq() -> None:
    assert matches({"any": 3}, {"any__eq": 3}) and not matches({"any": 3}, {"any__eq": 4})
    with pytest.raises(ValueError, match="'any' takes a list of wheres"):
        matches({"any": 3}, {"any": 3})


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({"title__like": "x"}, "unknown where operator 'like' in 'title__like'"),
        ({"not": {"any": [{"room__regex": "B"}]}}, "unknown where operator 'regex'"),
        ({"all": {"room": "B2"}}, "'all' takes a list of wheres"),
        ({"not": ["room"]}, "a where must be a JSON object"),
    ],
)
def test_a_bad_where_raises_before_any_record_is_seen(where: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        where_matcher(where)
    with pytest.raises(ValueError, match=message):
        matches(None, where)  # no record, or no field: the typo still cannot pass unseen


def test_state_predicates_take_combinators() -> None:
    before = {"a": {"t": {"x": {"v": 1, "tag": "keep"}}}}
    after = {"a": {"t": {"x": {"v": 1, "tag": "keep"}, "y": {"v": 2, "tag": "drop"}}}}
    absent = plugins.predicate("state.absent")
    assert absent(_view(before, after), {"path": "/a/t", "where": {"all": [{"v": 2}, {"not": {"tag": "drop"}}]}})[0]
    assert not absent(_view(before, after), {"path": "/a/t", "where": {"any": [{"v": 3}, {"tag": "drop"}]}})[0]


def _view(initial: dict, final: dict) -> EvidenceView:
    return EvidenceView(Evidence(backend="sandbox", initial_state=initial, final_state=final))


def test_exists_with_new_ignores_records_that_already_matched() -> None:
    before = {"a": {"t": {"x": {"v": 1}}}}
    after = {"a": {"t": {"x": {"v": 1}, "y": {"v": 2}}}}
    exists = plugins.predicate("state.exists")
    assert not exists(_view(before, before), {"path": "/a/t", "where": {"v": 1}, "new": True})[0]
    assert exists(_view(before, after), {"path": "/a/t", "where": {"v": 2}, "new": True})[0]


def test_collateral_prefixes_are_path_segments() -> None:
    before = {"a": {"t": {"x": 1}, "tt": {"y": 1}}}
    after = {"a": {"t": {"x": 2}, "tt": {"y": 2}}}
    criterion = NoCollateralCriterion(id="c", description="-", allowed_paths=["/a/t"])
    ok, detail = check_collateral(criterion, _view(before, after).changed_paths)
    assert not ok and "/a/tt/y" in detail
