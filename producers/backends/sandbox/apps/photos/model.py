"""Photos (with place and people tags), albums and document files."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, day

FILE_FOLDERS = ("documents", "downloads", "receipts", "travel")


class Photo(TypedDict):
    id: str
    title: str
    taken: str
    city: str
    people: list[str]
    favorite: bool
    albums: list[str]


class Album(TypedDict):
    id: str
    name: str


class File(TypedDict):
    id: str
    name: str
    folder: str
    size_kb: int


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    people = s.contacts()
    photos = {}
    for i in range(1, 21):
        photos[f"ph_{i}"] = Photo(
            id=f"ph_{i}",
            title=f"{s.phrase(1).title()} {s.pick(('sunset', 'dinner', 'beach', 'party', 'hike'))}",
            taken=day(-s.rng.randrange(1, 90)),
            city=s.pick(s.pool.cities),
            people=[p["id"] for p in s.sample(people, s.rng.randrange(0, 3))],
            favorite=False,
            albums=[],
        )
    albums = {"alb_1": Album(id="alb_1", name="Best of")}
    files = {}
    for i in range(1, 11):
        files[f"file_{i}"] = File(
            id=f"file_{i}",
            name=f"{s.phrase(1)}_{i}.{s.pick(('pdf', 'docx', 'txt'))}",
            folder=s.pick(FILE_FOLDERS),
            size_kb=s.rng.randrange(10, 5000),
        )
    return {"photos": photos, "albums": albums, "files": files}
