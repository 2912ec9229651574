"""Names a shell completes: projects, frames, members and views, read from the registry.

A completion runs on every TAB, so this opens the published registry read-only
(no engine, no tmux, no broker) and answers with plain rows. Anything that keeps
it from reading (no home yet, a broken file) is an empty answer: a completion
never prints an error into the command line being typed.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from core.model.errors import SwitchboardError
from core.model.text import first_unsafe_char, shown

if TYPE_CHECKING:
    from core.config.home import Home

#: Words every member argument accepts besides a frame title (core.broker.membership).
MEMBER_WORDS = ("person", "parent", "workspace")


class NameKind(StrEnum):
    """What an argument names; the value is the word ``completion --names`` takes."""

    PROJECT = "projects"
    """Project names (every command taking a project also takes its id)."""
    FRAME = "frames"
    """Frame ids (what ``frame show|start|...`` take), described by their titles."""
    MEMBER = "members"
    """Open frames' titles and the member words: what ``message --to`` and ``member`` take."""
    VIEW = "views"
    """Live view ids, described by their project's name."""


@dataclass(frozen=True)
class NameEntry:
    """One candidate: the word to insert and what it is, for shells that show both."""

    value: str
    description: str = ""


def registry_names(home: Home, kind: NameKind) -> list[NameEntry]:
    """The candidates of one kind, or none when the registry cannot be read."""
    from core.config.registry import open_current

    try:
        opened = open_current(home, readonly=True)
    except (SwitchboardError, sqlite3.Error, OSError):
        return []
    try:
        if kind is NameKind.PROJECT:  # projects are the config's; a registry row comes later
            found = [NameEntry(project.name, f"project at {project.root}")
                     for project in sorted(opened.config.projects, key=lambda p: p.name)]
        else:
            found = _QUERIES[kind](opened.conn)
    except sqlite3.Error:
        return []
    finally:
        opened.conn.close()
    # A name is typed into a command line as it is, so one holding a control character
    # (older rows, before titles were checked) is left out rather than escaped into a
    # word that names nothing; descriptions are only shown, so they are escaped.
    return [NameEntry(entry.value, shown(entry.description)) for entry in found
            if entry.value and first_unsafe_char(entry.value) is None]


def _frames(conn: sqlite3.Connection) -> list[NameEntry]:
    rows = conn.execute(
        "SELECT f.frame_id, f.title, f.role, f.lifecycle_state, p.name FROM frames f"
        " JOIN projects p USING (project_id)"
        " ORDER BY f.lifecycle_state <> 'open', p.name, f.created_at")
    return [NameEntry(frame_id, f"{title} ({project} {role}, {state})")
            for frame_id, title, role, state, project in rows]


def _members(conn: sqlite3.Connection) -> list[NameEntry]:
    rows = conn.execute(
        "SELECT DISTINCT f.title, p.name FROM frames f JOIN projects p USING (project_id)"
        " WHERE f.lifecycle_state = 'open' ORDER BY p.name, f.title")
    return [*(NameEntry(title, f"frame in {project}") for title, project in rows),
            *(NameEntry(word, "member word") for word in MEMBER_WORDS)]


def _views(conn: sqlite3.Connection) -> list[NameEntry]:
    rows = conn.execute(
        "SELECT v.view_id, p.name FROM user_views v LEFT JOIN projects p USING (project_id)"
        " WHERE v.state <> 'retired' ORDER BY p.name")
    return [NameEntry(view_id, f"view of {project or 'no project'}") for view_id, project in rows]


_QUERIES = {NameKind.FRAME: _frames, NameKind.MEMBER: _members, NameKind.VIEW: _views}
