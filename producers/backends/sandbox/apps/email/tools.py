"""Email tools: send, reply, forward, organise folders and flags, work with drafts."""

from __future__ import annotations

from pydantic import Field

from producers.backends.sandbox.apps.email.model import FOLDERS, Draft, Email
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs
from producers.backends.sandbox.seeding import NOW
from producers.backends.sandbox.world import World

TOOLS = AppTools("email")
TOOLS.collection("emails", Email, noun="email", search=("subject", "body", "sender"), example_id="em_1")
TOOLS.collection("drafts", Draft, noun="draft", search=("subject", "body"), example_id="dr_1", delete=True)
TOOLS.flag(
    "emails",
    "read",
    Email,
    noun="email",
    on=("mark_read", "Mark an email as read."),
    off=("mark_unread", "Mark an email as unread."),
    example_id="em_1",
)
TOOLS.flag(
    "emails",
    "starred",
    Email,
    noun="email",
    on=("star", "Star an email."),
    off=("unstar", "Remove the star from an email."),
    example_id="em_1",
)

Address = Field(pattern=r"^[^@\s]+@[^@\s]+$")


class Compose(Args):
    to: list[str] = Field(min_length=1, max_length=20, description="Recipient email addresses.")
    subject: str = Field(max_length=200)
    body: str = Field(max_length=10000)


class NewDraft(Args):
    to: list[str] = Field(default_factory=list, max_length=20)
    subject: str = Field("", max_length=200)
    body: str = Field("", max_length=10000)


class ReplyArgs(Args):
    email_id: str
    body: str = Field(min_length=1, max_length=10000)


class ForwardArgs(Args):
    email_id: str
    to: str = Address


class MoveArgs(Args):
    email_id: str
    folder: str


class FolderArgs(Args):
    folder: str


class DraftEdit(Args):
    draft_id: str
    to: list[str] | None = None
    subject: str | None = None
    body: str | None = None


def deliver(world: World, to: list[str], subject: str, body: str) -> Email:
    """Put an outgoing email in the sent folder; every sending tool goes through here."""
    bad = [addr for addr in to if "@" not in addr]
    if bad or not to:
        raise ToolFailure("invalid_argument", f"invalid recipient address(es): {bad or to}")
    eid = world.new_id("email", "emails", "em")
    return world.put(
        "email",
        "emails",
        eid,
        Email(
            id=eid,
            sender="me@mail.test",
            to=list(to),
            subject=subject,
            body=body,
            at=NOW.isoformat(timespec="minutes"),
            folder="sent",
            read=True,
            starred=False,
        ),
    )


def _email(world: World, email_id: str) -> Email:
    return world.get("email", "emails", email_id, "email")


def _move(world: World, email_id: str, folder: str) -> Email:
    if folder not in FOLDERS:
        raise ToolFailure("invalid_argument", f"unknown folder {folder!r}; folders: {', '.join(FOLDERS)}")
    if _email(world, email_id)["folder"] == folder:
        raise ToolFailure("conflict", f"email {email_id} is already in {folder}")
    return world.patch("email", "emails", email_id, folder=folder)


_NF = {"not_found": "no such email"}
_FLAG = {**_NF, "conflict": "the flag already has that value"}


@TOOLS.tool(
    writes=True,
    errors={"invalid_argument": "a recipient is not an email address"},
    example={"to": ["a@mail.test"], "subject": "Hi", "body": "Hello"},
)
def send(world: World, a: Compose) -> Email:
    """Send a new email."""
    return deliver(world, a.to, a.subject, a.body)


@TOOLS.tool(writes=True, errors=_NF, example={"email_id": "em_1", "body": "Sounds good"})
def reply(world: World, a: ReplyArgs) -> Email:
    """Reply to the sender of an email."""
    original = _email(world, a.email_id)
    return deliver(world, [original["sender"]], f"Re: {original['subject']}", a.body)


@TOOLS.tool(writes=True, errors=_NF, example={"email_id": "em_1", "to": "b@mail.test"})
def forward(world: World, a: ForwardArgs) -> Email:
    """Forward an email to another address."""
    original = _email(world, a.email_id)
    return deliver(world, [a.to], f"Fwd: {original['subject']}", original["body"])


@TOOLS.tool(
    writes=True,
    errors={**_NF, "conflict": "already in that folder", "invalid_argument": "unknown folder"},
    example={"email_id": "em_1", "folder": "archive"},
)
def move(world: World, a: MoveArgs) -> Email:
    """Move an email to a folder."""
    return _move(world, a.email_id, a.folder)


@TOOLS.tool(writes=True, errors={**_NF, "conflict": "already archived"}, example={"id": "em_1"})
def archive(world: World, a: IdArgs) -> Email:
    """Move an email to the archive."""
    return _move(world, a.id, "archive")


@TOOLS.tool(writes=True, errors={**_NF, "conflict": "already in trash"}, example={"id": "em_1"})
def trash(world: World, a: IdArgs) -> Email:
    """Move an email to the trash."""
    return _move(world, a.id, "trash")


@TOOLS.tool(errors={"invalid_argument": "unknown folder"}, example={"folder": "inbox"})
def list_folder(world: World, a: FolderArgs) -> list[Email]:
    """Emails in one folder, newest first."""
    if a.folder not in FOLDERS:
        raise ToolFailure("invalid_argument", f"unknown folder {a.folder!r}; folders: {', '.join(FOLDERS)}")
    return sorted(
        (e for e in world.table("email", "emails").values() if e["folder"] == a.folder),
        key=lambda e: e["at"],
        reverse=True,
    )


@TOOLS.tool(writes=True, example={"subject": "Plan", "body": "..."})
def create_draft(world: World, a: NewDraft) -> Draft:
    """Save a new draft without sending it."""
    did = world.new_id("email", "drafts", "dr")
    return world.put("email", "drafts", did, Draft(id=did, to=list(a.to), subject=a.subject, body=a.body))


@TOOLS.tool(writes=True, errors={"not_found": "no such draft"}, example={"draft_id": "dr_1", "body": "Updated"})
def update_draft(world: World, a: DraftEdit) -> Draft:
    """Change a draft's recipients, subject or body (omitted fields stay)."""
    world.get("email", "drafts", a.draft_id, "draft")
    edits = {k: v for k, v in (("to", a.to), ("subject", a.subject), ("body", a.body)) if v is not None}
    return world.patch("email", "drafts", a.draft_id, **edits)


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such draft", "invalid_argument": "the draft has no valid recipient"},
    example={"id": "dr_1"},
)
def send_draft(world: World, a: IdArgs) -> Email:
    """Send a draft (it leaves the drafts folder)."""
    draft = world.get("email", "drafts", a.id, "draft")
    sent = deliver(world, draft["to"], draft["subject"], draft["body"])
    world.delete("email", "drafts", a.id)
    return sent
