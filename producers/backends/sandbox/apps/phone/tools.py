"""Phone tools: call contacts or numbers, read the call log and voicemail."""

from __future__ import annotations

from pydantic import Field, model_validator

from producers.backends.sandbox.apps.common import contact, require_permission
from producers.backends.sandbox.apps.phone.model import Call, Voicemail
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs, NoArgs
from producers.backends.sandbox.seeding import NOW
from producers.backends.sandbox.world import World

TOOLS = AppTools("phone")
TOOLS.collection(
    "calls", Call, noun="call", search=("number", "contact_id", "direction"), example_id="call_1", delete=True
)
TOOLS.collection(
    "voicemails", Voicemail, noun="voicemail", search=("transcript", "number"), example_id="vm_1", delete=True
)


class Dial(Args):
    contact_id: str = ""
    number: str = Field("", pattern=r"^(\+?[0-9 \-]{5,20})?$")

    @model_validator(mode="after")
    def _one_target(self) -> Dial:
        if bool(self.contact_id) == bool(self.number):
            raise ValueError("give exactly one of contact_id or number")
        return self


@TOOLS.tool(
    writes=True,
    errors={
        "not_found": "no such contact",
        "permission_denied": "phone.calls permission not granted",
        "conflict": "the contact is blocked",
    },
    example={"contact_id": "c_1"},
)
def call(world: World, a: Dial) -> Call:
    """Place a call to a contact or a number (it is logged as an outgoing call)."""
    require_permission(world, "phone.calls")
    number, cid = a.number, ""
    if a.contact_id:
        person = contact(world, a.contact_id)
        if person["blocked"]:
            raise ToolFailure("conflict", f"{person['name']} is blocked; unblock them first")
        number, cid = person["phone"], person["id"]
    call_id = world.new_id("phone", "calls", "call")
    return world.put(
        "phone",
        "calls",
        call_id,
        Call(
            id=call_id,
            number=number,
            contact_id=cid,
            direction="outgoing",
            at=NOW.isoformat(timespec="minutes"),
            duration_s=60,
        ),
    )


@TOOLS.tool()
def list_missed(world: World, a: NoArgs) -> list[Call]:
    """Missed calls, newest first."""
    return sorted(
        (c for c in world.table("phone", "calls").values() if c["direction"] == "missed"),
        key=lambda c: c["at"],
        reverse=True,
    )


@TOOLS.tool(errors={"not_found": "the call log is empty"})
def last_call(world: World, a: NoArgs) -> Call:
    """The most recent call of any direction."""
    calls = world.table("phone", "calls").values()
    if not calls:
        raise ToolFailure("not_found", "the call log is empty")
    return max(calls, key=lambda c: (c["at"], c["id"]))


@TOOLS.tool(writes=True, errors={"not_found": "no such voicemail", "conflict": "already heard"}, example={"id": "vm_1"})
def mark_voicemail_heard(world: World, a: IdArgs) -> Voicemail:
    """Mark a voicemail as listened to."""
    vm = world.get("phone", "voicemails", a.id, "voicemail")
    if vm["heard"]:
        raise ToolFailure("conflict", f"voicemail {a.id} was already heard")
    return world.patch("phone", "voicemails", a.id, heard=True)
