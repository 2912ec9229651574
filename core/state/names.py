"""Names a shell completes: projects, frames, members and views, read from the registry.

A completion runs on every TAB, so this opens the published registry read-only
(no engine, no tmux, no broker) and answers with plain rows. Anything that keeps
it from reading (no home yet, a broken file) is an empty answer: a completion
never prints an error into the command line being typed.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from core.config.naming import Named, resolve
from core.model.errors import SwitchboardError
from core.model.text import first_unsafe_char, shown

if TYPE_CHECKING:
    from pathlib import Path

    from core.config.config import Config
    from core.config.home import Home

#: Words every member argument accepts besides a frame title (core.broker.membership).
MEMBER_WORDS = ("person", "parent", "workspace")


class NameKind(StrEnum):
    """What an argument names; the value is the word ``completion --names`` takes."""

    PROJECT = "projects"
    """Project names (every command taking a project also takes its id)."""
    FRAME = "frames"
    """Frame titles (``project/title`` where a title repeats), described by project, role,
    state and id: what ``frame show|start|...`` take."""
    MEMBER = "members"
    """Open frames' titles and the member words: what ``message --to`` and ``member`` take."""
    VIEW = "views"
    """Live views by their project's name, described by their id."""


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
    """Each frame by the shortest spelling that names it alone (``resolve_name``'s
    rules): its title, else ``project/title``, else its id; open frames first."""
    rows = conn.execute(
        "SELECT f.frame_id, f.title, f.role, f.lifecycle_state, p.name FROM frames f"
        " JOIN projects p USING (project_id)"
        " ORDER BY f.lifecycle_state <> 'open', p.name, f.created_at").fetchall()
    titles = Counter(title.casefold() for _, title, _, _, _ in rows)
    scoped = Counter(f"{project}/{title}".casefold() for _, title, _, _, project in rows)
    found = []
    for frame_id, title, role, state, project in rows:
        what = f"{project} {role}, {state}"
        if first_unsafe_char(f"{project}/{title}") is not None:
            found.append(NameEntry(frame_id, f"{title} ({what})"))  # typed, it names nothing
        elif titles[title.casefold()] == 1 and "/" not in title:
            found.append(NameEntry(title, f"{what}, {frame_id[:8]}"))
        elif scoped[f"{project}/{title}".casefold()] == 1:
            found.append(NameEntry(f"{project}/{title}", f"{what}, {frame_id[:8]}"))
        else:
            found.append(NameEntry(frame_id, f"{title} ({what})"))
    return found


def _members(conn: sqlite3.Connection) -> list[NameEntry]:
    rows = conn.execute(
        "SELECT DISTINCT f.title, p.name FROM frames f JOIN projects p USING (project_id)"
        " WHERE f.lifecycle_state = 'open' ORDER BY p.name, f.title")
    return [*(NameEntry(title, f"frame in {project}") for title, project in rows),
            *(NameEntry(word, "member word") for word in MEMBER_WORDS)]


def _views(conn: sqlite3.Connection) -> list[NameEntry]:
    """Live views by their project's name (one live view per project)."""
    rows = conn.execute(
        "SELECT v.view_id, p.name FROM user_views v LEFT JOIN projects p USING (project_id)"
        " WHERE v.state <> 'retired' ORDER BY p.name")
    return [NameEntry(project or view_id, f"view {view_id[:8]}") for view_id, project in rows]


_QUERIES = {NameKind.FRAME: _frames, NameKind.MEMBER: _members, NameKind.VIEW: _views}


# ----------------------------------------------------------------- resolving a name


def frame_candidates(conn: sqlite3.Connection) -> list[Named]:
    """Every frame, named by its title within its project."""
    rows = conn.execute(
        "SELECT f.frame_id, f.title, p.name, f.role, f.lifecycle_state FROM frames f"
        " JOIN projects p USING (project_id) ORDER BY p.name, f.created_at, f.frame_id")
    return [Named(frame_id, title, project, f"{state} {role}")
            for frame_id, title, project, role, state in rows]


def view_candidates(conn: sqlite3.Connection) -> list[Named]:
    """Every view; a live one is named by its project (one live view per project), a
    retired one only by its id."""
    rows = conn.execute(
        "SELECT v.view_id, p.name, v.state FROM user_views v"
        " LEFT JOIN projects p USING (project_id) ORDER BY p.name, v.view_id")
    return [Named(view_id, (project or "") if state != "retired" else "", note=state)
            for view_id, project, state in rows]


RESOLVED_KINDS = frozenset({NameKind.FRAME, NameKind.VIEW, NameKind.PROJECT})
"""The kinds ``resolve_name`` turns into ids (members are the broker's to resolve)."""


def resolve_name(conn: sqlite3.Connection, config: Config, kind: NameKind, text: str) -> str:
    """The id of the frame, view or project ``text`` names (``core.config.naming``'s
    rules); NotFound or AmbiguousName in one line otherwise."""
    if kind is NameKind.PROJECT:
        return config.project_id_for(text)  # the config's projects, by the same rules
    if kind is NameKind.FRAME:
        return resolve(text, frame_candidates(conn), what="frame",
                       listing="switchboard frame list").id
    if kind is NameKind.VIEW:
        return resolve(text, view_candidates(conn), what="view",
                       listing="switchboard view list").id
    raise ValueError(f"{kind.value} are not resolved to an id")


def resolve_one(conn: sqlite3.Connection, config: Config, home_root: Path, kind: NameKind,
                value: str) -> str:
    """The id ``value`` names (``core.state.names.resolve_name``); an unknown view also
    says which home was searched, since a view id is most often copied from another
    home's pane or listing."""
    from core.model.errors import NotFound

    try:
        return resolve_name(conn, config, kind, value)
    except NotFound as exc:
        if kind is not NameKind.VIEW:
            raise
        raise NotFound(f"{exc.message}; views belong to one Switchboard home and this is "
                       f"{home_root} (SWITCHBOARD_HOME); nothing was opened") from None
