"""Music tools: find and like tracks, edit playlists, control playback."""

from __future__ import annotations

from pydantic import Field

from producers.backends.sandbox.apps.music.model import Player, Playlist, Track
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs, NoArgs
from producers.backends.sandbox.world import World

TOOLS = AppTools("music")
TOOLS.collection("tracks", Track, noun="track", search=("title", "artist", "genre"), example_id="trk_1")
TOOLS.collection("playlists", Playlist, noun="playlist", search=("name",), example_id="pls_1", delete=True)
TOOLS.records.update(player=Player)
TOOLS.members(
    "playlists",
    "track_ids",
    Playlist,
    noun="playlist",
    owner_arg="playlist_id",
    member_arg="track_id",
    add=("add_to_playlist", "Append a track to a playlist."),
    remove=("remove_from_playlist", "Remove a track from a playlist."),
    example={"playlist_id": "pls_1", "track_id": "trk_30"},
    member_of=("music", "tracks", "track"),
)
TOOLS.flag(
    "tracks",
    "liked",
    Track,
    noun="track",
    on=("like", "Like a track."),
    off=("unlike", "Remove a track from liked songs."),
    example_id="trk_2",
)


class NewPlaylist(Args):
    name: str = Field(min_length=1, max_length=60)


class Volume(Args):
    level: int = Field(ge=0, le=100)


class Artist(Args):
    artist: str


def _track(world: World, track_id: str) -> Track:
    return world.get("music", "tracks", track_id, "track")


def _playlist(world: World, playlist_id: str) -> Playlist:
    return world.get("music", "playlists", playlist_id, "playlist")


def _player(world: World, **fields: object) -> Player:
    return world.patch("music", "player", "state", **fields)


@TOOLS.tool(writes=True, errors={"conflict": "a playlist with that name exists"}, example={"name": "Road trip"})
def create_playlist(world: World, a: NewPlaylist) -> Playlist:
    """Create an empty playlist."""
    if any(p["name"].lower() == a.name.lower() for p in world.table("music", "playlists").values()):
        raise ToolFailure("conflict", f"playlist {a.name!r} exists")
    pid = world.new_id("music", "playlists", "pls")
    return world.put("music", "playlists", pid, Playlist(id=pid, name=a.name, track_ids=[]))


@TOOLS.tool(writes=True, errors={"not_found": "no such track"}, example={"id": "trk_1"})
def play_track(world: World, a: IdArgs) -> Player:
    """Start playing a track."""
    _track(world, a.id)
    return _player(world, track_id=a.id, playing=True)


@TOOLS.tool(
    writes=True, errors={"not_found": "no such playlist", "conflict": "the playlist is empty"}, example={"id": "pls_1"}
)
def play_playlist(world: World, a: IdArgs) -> Player:
    """Play a playlist from its first track."""
    tracks = _playlist(world, a.id)["track_ids"]
    if not tracks:
        raise ToolFailure("conflict", f"playlist {a.id} is empty")
    return _player(world, track_id=tracks[0], playing=True)


@TOOLS.tool(writes=True, errors={"conflict": "nothing is playing"})
def pause(world: World, a: NoArgs) -> Player:
    """Pause playback."""
    if not world.table("music", "player")["state"]["playing"]:
        raise ToolFailure("conflict", "nothing is playing")
    return _player(world, playing=False)


@TOOLS.tool(writes=True, errors={"conflict": "already playing or nothing queued"})
def resume(world: World, a: NoArgs) -> Player:
    """Resume the paused track."""
    state = world.table("music", "player")["state"]
    if state["playing"] or not state["track_id"]:
        raise ToolFailure("conflict", "already playing, or nothing to resume")
    return _player(world, playing=True)


@TOOLS.tool(writes=True, example={"level": 30})
def set_volume(world: World, a: Volume) -> Player:
    """Set the media volume 0-100."""
    return _player(world, volume=a.level)


@TOOLS.tool(writes=True)
def toggle_shuffle(world: World, a: NoArgs) -> Player:
    """Turn shuffle on or off."""
    return _player(world, shuffle=not world.table("music", "player")["state"]["shuffle"])


@TOOLS.tool()
def now_playing(world: World, a: NoArgs) -> Player:
    """The player state: current track, playing or not, volume."""
    return world.table("music", "player")["state"]


@TOOLS.tool()
def list_liked(world: World, a: NoArgs) -> list[Track]:
    """Liked tracks."""
    return [t for t in world.table("music", "tracks").values() if t["liked"]]


@TOOLS.tool(example={"artist": "Nova Echo"})
def by_artist(world: World, a: Artist) -> list[Track]:
    """Tracks by an artist."""
    return [t for t in world.table("music", "tracks").values() if t["artist"].lower() == a.artist.lower()]
