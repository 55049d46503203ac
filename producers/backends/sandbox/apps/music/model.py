"""Tracks by the pool's artists, playlists, and the player state."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder


class Track(TypedDict):
    id: str
    title: str
    artist: str
    genre: str
    duration_s: int
    liked: bool


class Playlist(TypedDict):
    id: str
    name: str
    track_ids: list[str]


class Player(TypedDict):
    track_id: str
    playing: bool
    volume: int
    shuffle: bool


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    tracks = {}
    for i in range(1, 31):
        tracks[f"trk_{i}"] = Track(
            id=f"trk_{i}",
            title=s.phrase(2).title(),
            artist=s.pick(s.pool.artists),
            genre=s.pick(("pop", "jazz", "rock", "ambient", "folk")),
            duration_s=s.rng.randrange(120, 360),
            liked=s.rng.random() < 0.2,
        )
    playlists = {
        "pls_1": Playlist(id="pls_1", name="Morning", track_ids=[f"trk_{i}" for i in s.sample(range(1, 31), 5)])
    }
    return {
        "tracks": tracks,
        "playlists": playlists,
        "player": {"state": Player(track_id="", playing=False, volume=50, shuffle=False)},
    }
