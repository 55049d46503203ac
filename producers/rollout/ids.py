"""Deterministic episode ids per (request, group member, attempt), so a redelivered request finds its own episodes."""

from __future__ import annotations

import re

from bus_schemas.events.rollouts import RolloutRequested

_SUFFIX = re.compile(r"^(?:\.g(?P<member>\d+))?(?:\.a(?P<attempt>\d+))?$")


def episode_id_for(request: RolloutRequested, member: int, attempt: int) -> str:
    """Member 0, attempt 0 keeps the request's own episode id; others get ``.g<member>`` / ``.a<attempt>`` suffixes."""
    return request.episode_id + (f".g{member}" if member else "") + (f".a{attempt}" if attempt else "")


def parse_episode_id(request: RolloutRequested, episode_id: str) -> tuple[int, int] | None:
    """(member, attempt) when ``episode_id`` belongs to ``request``, else ``None``."""
    if not episode_id.startswith(request.episode_id):
        return None
    found = _SUFFIX.match(episode_id[len(request.episode_id) :])
    if found is None:
        return None
    member, attempt = int(found["member"] or 0), int(found["attempt"] or 0)
    return (member, attempt) if member < request.group_size else None
