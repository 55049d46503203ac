"""World state: copy-on-write isolation, diffs, rollback, bit-for-bit deterministic hashes, no crash on any input."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter
from sandbox_support import GRANTED, replay

from bus_schemas.actions import ToolCall
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.catalog import RECORDS, TOOLS, base_world
from producers.backends.sandbox.pools import NEW_ENTITIES, NEW_ENTITY_WORLDS, POOLS, SPLITS, split_pool, world_pool
from producers.backends.sandbox.world import World, diff, state_hash

pytestmark = pytest.mark.unit

ALL_EXAMPLES = [(name, dict(tool.example)) for name, tool in TOOLS.items()]


def test_seeded_worlds_are_deterministic_and_split_specific() -> None:
    base_world.cache_clear()
    first = state_hash(base_world(3, "dev"))
    base_world.cache_clear()
    assert state_hash(base_world(3, "dev")) == first
    assert state_hash(base_world(3, "test")) != first
    dev_names = {c["name"] for c in base_world(3, "dev")["contacts"]["contacts"].values()}
    train_names = {c["name"] for s in range(6) for c in base_world(s, "train")["contacts"]["contacts"].values()}
    assert not dev_names & train_names


def _first_names(world: dict[str, Any]) -> set[str]:
    return {c["name"].split()[0] for c in world["contacts"]["contacts"].values()}


def test_built_in_worlds_use_the_base_share_and_generated_ones_name_new_entities_too() -> None:
    for seed in (0, 5, 1003, NEW_ENTITY_WORLDS - 1):
        assert world_pool("train", seed) == POOLS["train"]
    generated = [NEW_ENTITY_WORLDS + s for s in (0, 7, 123_456)]
    for seed in generated:
        pool = world_pool("train", seed)
        assert len(pool.first) == len(POOLS["train"].first) and len(pool.cities) == len(POOLS["train"].cities)
        assert set(pool.first) <= set(split_pool("train").first)
        assert set(pool.first) & set(NEW_ENTITIES["train"].first)  # not just the base share
        names = _first_names(base_world(seed, "train"))
        assert names <= set(pool.first) and names - set(POOLS["train"].first)
        assert {f["city"] for f in base_world(seed, "train")["weather"]["forecasts"].values()} == set(pool.cities)
    assert len({world_pool("train", s) for s in generated}) == len(generated)  # each world draws its own
    for split in ("dev", "test"):  # no new entities: a generated world of theirs holds their base share
        assert world_pool(split, generated[1]) == POOLS[split]


def test_no_entity_is_shared_across_splits_or_part_of_another_name() -> None:
    """A contacts search for "Lara" would also find "Clara": within a split no name contains another."""
    for split in SPLITS:
        names = [n.lower() for n in split_pool(split).first + split_pool(split).last]
        assert len(set(names)) == len(names)
        assert not [(a, b) for a in names for b in names if a != b and a in b]
        cities = [c.lower() for c in split_pool(split).cities]
        assert not [(a, b) for a in cities for b in cities if a != b and a in b]
        for other in SPLITS:
            if other != split:
                assert not set(split_pool(split).first) & set(split_pool(other).first)
                assert not set(split_pool(split).cities) & set(split_pool(other).cities)
                assert not set(split_pool(split).venues) & set(split_pool(other).venues)


def assert_typed(state: dict[str, Any]) -> None:
    for (app, coll), record in RECORDS.items():
        TypeAdapter(dict[str, record]).validate_python(state[app][coll], strict=True)  # type: ignore[valid-type]


def test_state_tables_match_their_record_types_before_and_after_every_tool() -> None:
    assert len(RECORDS) >= 35
    for split in ("train", "dev", "test"):
        assert_typed(base_world(1, split))
    backend = SandboxBackend()
    replay(backend, GRANTED, ALL_EXAMPLES)
    assert_typed(backend.state())


def test_same_actions_give_the_same_hash_and_never_touch_the_shared_initial_state() -> None:
    backend = SandboxBackend()
    pristine = copy.deepcopy(backend.initial_state(GRANTED, 0))
    replay(backend, GRANTED, ALL_EXAMPLES)
    first = backend.evidence().state_hash
    replay(backend, GRANTED, ALL_EXAMPLES)
    assert backend.evidence().state_hash == first
    assert backend.initial_state(GRANTED, 0) == pristine
    assert first != state_hash(pristine)


def test_reset_discards_the_episode() -> None:
    backend = SandboxBackend()
    replay(backend, GRANTED, [("notes.create_note", {"title": "x"})])
    backend.reset(GRANTED)
    assert backend.state() is backend.initial_state(GRANTED, 0)
    assert backend.evidence().calls == []


def test_diff_reports_added_changed_removed_with_paths() -> None:
    world = World(base_world(0, "train"))
    world.put("notes", "notes", "note_99", {"id": "note_99"})
    world.patch("contacts", "contacts", "c_1", name="Renamed")
    world.delete("clock", "alarms", "al_1")
    ops = {c.path: c.op for c in diff(world.base, world.state())}
    assert ops == {
        "/notes/notes/note_99": "added",
        "/contacts/contacts/c_1": "changed",
        "/clock/alarms/al_1": "removed",
    }
    assert sorted(c.path for c in world.log) == sorted(ops)


def test_rollback_restores_the_tables() -> None:
    world = World(base_world(0, "train"))
    world.patch("contacts", "contacts", "c_1", name="Renamed")
    mark = len(world.log)
    world.put("notes", "notes", "note_99", {"id": "note_99"})
    world.delete("contacts", "contacts", "c_2")
    world.rollback(mark)
    assert [c.path for c in diff(world.base, world.state())] == ["/contacts/contacts/c_1"]


def test_step_reports_changes_and_evidence_records_calls() -> None:
    backend = SandboxBackend()
    obs = replay(backend, GRANTED, [("clock.set_alarm", {"time": "04:10"})])
    assert [(c.path, c.op) for c in obs.changes] == [(f"/clock/alarms/{obs.result['id']}", "added")]  # type: ignore[index]
    replay(backend, GRANTED, [("clock.set_alarm", {"time": "bad"})])
    assert backend.evidence().calls == [
        {"name": "clock.set_alarm", "args": {"time": "bad"}, "ok": False, "error": "invalid_argument"}
    ]


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 200)
    | st.text(max_size=8)
    | st.sampled_from(["c_1", "pl_2", "2026-03-03", "10:00", "trk_1"]),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=5,
)
_calls = st.lists(
    st.tuples(
        st.sampled_from(list(TOOLS)),
        st.one_of(
            st.dictionaries(
                st.sampled_from(["id", "contact_id", "query", "time", "on", "amount", "confirm", "day", "city"]),
                _json,
                max_size=3,
            ),
            st.just({}),
        ),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(_calls)
def test_random_action_sequences_never_raise_and_replay_identically(calls: list[tuple[str, dict[str, Any]]]) -> None:
    backend = SandboxBackend()
    backend.reset(GRANTED)
    for name, args in calls:
        obs = backend.step(ToolCall(name=name, args=args))
        assert obs.error is None or obs.error.code != "internal", obs.error
    replay(backend, GRANTED, calls)
    first = backend.evidence().state_hash
    replay(backend, GRANTED, calls)
    assert backend.evidence().state_hash == first
