"""Emails and drafts; some emails carry a meeting date that calendar tasks rely on."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, at, day

FOLDERS = ("inbox", "archive", "work", "travel", "receipts", "trash", "sent")


class Email(TypedDict):
    id: str
    sender: str
    to: list[str]
    subject: str
    body: str
    at: str
    folder: str
    read: bool
    starred: bool


class Draft(TypedDict):
    id: str
    to: list[str]
    subject: str
    body: str


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    emails: dict[str, Any] = {}
    for i, p in enumerate(s.sample(s.contacts(), 14), start=1):
        topic = s.phrase(2)
        kind = i % 3
        subject, body, folder = (
            (
                f"Meeting about {topic}",
                f"Can we meet on {day(s.rng.randrange(1, 10))} at {s.rng.randrange(9, 17)}:00 to discuss {topic}?",
                "inbox",
            ),
            (f"Receipt #{1000 + i}", f"You paid ${s.money(5, 200)} for {topic}.", "receipts"),
            (f"Re: {topic}", f"Here are my notes on {topic}.", "work"),
        )[kind]
        emails[f"em_{i}"] = Email(
            id=f"em_{i}",
            sender=p["email"],
            to=["me@mail.test"],
            subject=subject,
            body=body,
            at=at(-s.rng.randrange(0, 12), s.rng.randrange(7, 22)),
            folder=folder,
            read=s.rng.random() < 0.5,
            starred=False,
        )
    drafts = {"dr_1": Draft(id="dr_1", to=[], subject="Ideas", body=f"Thoughts on {s.phrase(2)}")}
    return {"emails": emails, "drafts": drafts}
