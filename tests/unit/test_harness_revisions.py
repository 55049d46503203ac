"""Harness patches: each change kind applied to a config, and the patches that must be refused."""

from __future__ import annotations

import pytest

from harness_service.config import CompactContext, HarnessConfig
from harness_service.revisions import (
    CHANGE_KINDS,
    AddInstruction,
    AddSkill,
    AddToolSuccessors,
    EditInstruction,
    EditSkill,
    InvalidPatch,
    SetBudgets,
    SetMemoryPolicy,
    SetToolNote,
    SetToolSelection,
    apply,
    parse_patch,
    patch_bytes,
    patch_digest,
    skill_notes,
)

pytestmark = pytest.mark.unit
BASE = HarnessConfig(name="tiny", instructions="Act with tools. Finish when done.")


def test_add_instruction_appends_a_line_and_keeps_everything_else():
    revised = apply(BASE, AddInstruction(text="Copy ids exactly."))
    assert revised.instructions == "Act with tools. Finish when done.\nCopy ids exactly."
    assert revised.memory == BASE.memory and revised.budgets == BASE.budgets and revised.name == BASE.name
    assert revised.digest() != BASE.digest()


def test_edit_instruction_replaces_the_exact_passage():
    revised = apply(BASE, EditInstruction(old="Finish when done.", new="Finish only when the goal holds."))
    assert revised.instructions == "Act with tools. Finish only when the goal holds."
    with pytest.raises(InvalidPatch, match="do not contain"):
        apply(BASE, EditInstruction(old="Never here.", new="Something else."))


def test_skill_notes_are_added_then_edited_not_duplicated():
    added = apply(BASE, AddSkill(name="contacts", tools=["contacts.search_contacts", "contacts.update_phone"]))
    assert skill_notes(added) == {"contacts": "Skill contacts: use contacts.search_contacts, contacts.update_phone."}
    with pytest.raises(InvalidPatch, match="already has a note"):
        apply(added, AddSkill(name="contacts", tools=["contacts.get_contact"]))
    edited = apply(added, EditSkill(name="contacts", tools=["contacts.get_contact"], note="Search first."))
    assert skill_notes(edited) == {"contacts": "Skill contacts: use contacts.get_contact. Search first."}
    assert edited.instructions.startswith(BASE.instructions) and edited.instructions.count("Skill ") == 1
    with pytest.raises(InvalidPatch, match="no note to edit"):
        apply(BASE, EditSkill(name="email", tools=["email.send"]))


def test_memory_and_budget_changes_set_only_the_given_fields():
    revised = apply(BASE, SetMemoryPolicy(retrieve_top_k=7))
    assert revised.memory.retrieve_top_k == 7 and revised.memory.enabled == BASE.memory.enabled
    revised = apply(BASE, SetBudgets(max_steps=40, max_invalid_actions=5))
    assert (revised.budgets.max_steps, revised.budgets.max_invalid_actions) == (40, 5)
    assert revised.budgets.context_tokens == BASE.budgets.context_tokens


@pytest.mark.parametrize(
    "patch, reason",
    [
        (AddInstruction(text="Act with tools."), "already say"),
        (SetMemoryPolicy(retrieve_top_k=BASE.memory.retrieve_top_k), "changes nothing"),
        (SetMemoryPolicy(retrieve_top_k=500), "retrieve_top_k"),
        (SetBudgets(max_steps=0), "max_steps"),
        (SetBudgets(), "sets no field"),
    ],
)
def test_patches_that_do_not_fit_the_base_are_refused(patch, reason):
    with pytest.raises(InvalidPatch, match=reason):
        apply(BASE, patch)


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "rewrite_everything", "text": "x"},
        {"kind": "add_instruction", "text": "two\nlines"},
        {"kind": "add_instruction", "text": "x" * 161},
        {"kind": "add_instruction", "text": "Skill contacts: use contacts.x."},
        {"kind": "add_instruction", "text": "ok", "extra": 1},
        {"kind": "add_skill", "name": "Contacts!", "tools": ["contacts.get_contact"]},
        {"kind": "add_skill", "name": "contacts", "tools": []},
    ],
)
def test_malformed_patches_are_rejected_with_a_clear_error(data):
    with pytest.raises(InvalidPatch, match="invalid harness patch"):
        parse_patch(data)


def test_patch_json_round_trips_canonically_for_every_kind():
    patches = [
        AddInstruction(text="Be exact."),
        EditInstruction(old="a", new="Be b."),
        AddSkill(name="maps", tools=["maps.route"]),
        EditSkill(name="maps", tools=["maps.route"], note="Route first."),
        SetMemoryPolicy(enabled=False),
        SetBudgets(max_steps=9),
        SetToolNote(tool="maps.route", note="step 1 of 2: route > book"),
        SetToolSelection(tool_top_k=4),
        AddToolSuccessors(successors={"": ("maps.search_places",), "maps.search_places": ("rides.request_ride",)}),
    ]
    assert sorted(p.kind for p in patches) == sorted(CHANGE_KINDS)
    for patch in patches:
        assert parse_patch(patch_bytes(patch)) == patch
        assert patch_digest(parse_patch(patch_bytes(patch))) == patch_digest(patch)
    assert patch_bytes(SetBudgets(max_steps=9)) == b'{"kind":"set_budgets","max_steps":9}'


COMPACT = BASE.model_copy(update={"compact": CompactContext()})


def test_a_tool_note_is_set_edited_and_removed_in_the_compact_profile_only():
    noted = apply(COMPACT, SetToolNote(tool="maps.route", note="step 1 of 2: route > book"))
    assert noted.compact is not None and noted.compact.tool_notes == {"maps.route": "step 1 of 2: route > book"}
    assert noted.instructions == COMPACT.instructions and noted.digest() != COMPACT.digest()
    edited = apply(noted, SetToolNote(tool="maps.route", note="route first"))
    assert edited.compact is not None and edited.compact.tool_notes == {"maps.route": "route first"}
    assert apply(edited, SetToolNote(tool="maps.route")) == COMPACT
    with pytest.raises(InvalidPatch, match="changes nothing"):
        apply(noted, SetToolNote(tool="maps.route", note="step 1 of 2: route > book"))
    with pytest.raises(InvalidPatch, match="no note to remove"):
        apply(COMPACT, SetToolNote(tool="maps.route"))
    with pytest.raises(InvalidPatch, match="needs a compact harness profile"):
        apply(BASE, SetToolNote(tool="maps.route", note="x"))
    with pytest.raises(InvalidPatch, match="invalid harness patch"):
        parse_patch({"kind": "set_tool_note", "tool": "maps.route", "note": "x" * 101})


def test_tool_selection_sets_the_compact_fields_within_their_bounds():
    shown = apply(COMPACT, SetToolSelection(tool_top_k=5, skill_chars=80))
    assert shown.compact is not None and (shown.compact.tool_top_k, shown.compact.skill_chars) == (5, 80)
    assert shown.compact.tool_notes == {} and shown.budgets == COMPACT.budgets
    with pytest.raises(InvalidPatch, match="tool_top_k"):
        apply(COMPACT, SetToolSelection(tool_top_k=65))
    with pytest.raises(InvalidPatch, match="sets no field"):
        apply(COMPACT, SetToolSelection())
    with pytest.raises(InvalidPatch, match="changes nothing"):
        apply(COMPACT, SetToolSelection(tool_top_k=CompactContext().tool_top_k))


def test_tool_successors_merge_into_the_compact_profile_by_entry():
    first = apply(
        COMPACT,
        AddToolSuccessors(successors={"": ("maps.search_places",), "maps.search_places": ("rides.request_ride",)}),
    )
    assert first.compact is not None and first.compact.tool_successors["maps.search_places"] == ("rides.request_ride",)
    again = apply(first, AddToolSuccessors(successors={"": ("contacts.search_contacts", "maps.search_places")}))
    assert again.compact is not None and again.compact.tool_successors == {
        "": ("contacts.search_contacts", "maps.search_places"),
        "maps.search_places": ("rides.request_ride",),
    }
    assert again.digest() != first.digest() != COMPACT.digest()
    with pytest.raises(InvalidPatch, match="changes nothing"):
        apply(again, AddToolSuccessors(successors={"maps.search_places": ("rides.request_ride",)}))
    with pytest.raises(InvalidPatch, match="needs a compact harness profile"):
        apply(BASE, AddToolSuccessors(successors={"": ("maps.route",)}))
    for bad in ({}, {"Maps": ["maps.route"]}, {"": []}, {"": ["a.b", "c.d", "e.f"]}, {"": ["route"]}):
        with pytest.raises(InvalidPatch, match="invalid harness patch"):
            parse_patch({"kind": "add_tool_successors", "successors": bad})
