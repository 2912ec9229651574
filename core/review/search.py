"""Search across every session of this host: the query side and the rebuild.

``search`` turns what the person typed into a safe FTS5 query (each word a
quoted term, the last one a prefix, so typing narrows as it goes and no FTS5
operator in the text can change the query), runs it on ``search.db`` and names
each hit's project and frame from the registry. ``rebuild`` indexes every
frame's brief, handoff, prompts, commands and failure signatures from the
registry and the session files: for evidence written before the index
existed, or after an index write failed.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.evidence.search_index import BRIEF, COMMAND, FAILURE, HANDOFF, PROMPT, failure_body
from core.model.errors import NotFound, SwitchboardError
from core.review.frames import open_registry
from storage.search_store import HIT_END, HIT_START

if TYPE_CHECKING:
    from core.config.home import Home
    from storage.search_store import Entry, Hit

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_CHARS = 500
DEFAULT_LIMIT = 50
#: A last word shorter than this matches whole words only (``a*`` would merge half
#: the index's terms).
MIN_PREFIX_CHARS = 2


class SearchRefused(SwitchboardError):
    code = "search_refused"


@dataclass(frozen=True)
class SearchResult:
    """One hit: what matched (``snippet`` marks the words with ``HIT_START``/``HIT_END``)
    and where it lives. ``anchor`` is the command run a command or failure belongs to."""

    kind: str
    project_id: str
    project_name: str
    frame_id: str | None
    frame_title: str
    frame_state: str
    session_key: str | None
    at: str
    anchor: str | None
    snippet: str

    @property
    def text(self) -> str:
        return self.snippet.replace(HIT_START, "").replace(HIT_END, "")


def fts_query(text: str, *, prefix: bool = True) -> str:
    """Words as quoted terms, all required, the last a prefix (``prefix``); refused when
    there is no word."""
    if len(text) > MAX_QUERY_CHARS:
        raise SearchRefused(f"the search text is {len(text)} characters; the limit is "
                            f"{MAX_QUERY_CHARS}")
    words = _WORD.findall(text)
    if not words:
        raise SearchRefused("type at least one word (letters or digits) to search for")
    terms = [f'"{w}"' for w in words]
    if prefix:
        terms[-1] += "*"
    return " ".join(terms)


def _hits(index: sqlite3.Connection, text: str, project_id: str | None,
          limit: int) -> list[Hit]:
    """Whole words first; the last word as a prefix only when they found fewer than
    ``limit`` rows. A prefix query merges every term it expands to (``w3*``: w3, w30,
    w300, ...), which for a common word cost 130 ms at 100,000 rows; whole words stop
    at the limit. The prefix query finds a superset, so it replaces the first answer."""
    from storage.search_store import query

    hits = query(index, fts_query(text, prefix=False), project_id=project_id, limit=limit)
    last = _WORD.findall(text)[-1]
    if len(hits) < limit and len(last) >= MIN_PREFIX_CHARS:
        hits = query(index, fts_query(text), project_id=project_id, limit=limit)
    return hits


def project_id_for(registry: sqlite3.Connection, name: str) -> str:
    rows = registry.execute("SELECT project_id, name FROM projects").fetchall()
    for row in rows:
        if name in (row[0], row[1]):
            return str(row[0])
    from core.model.text import shown

    known = ", ".join(sorted(shown(r[1]) for r in rows)) or "none yet"
    raise NotFound(f"no project {shown(name)!r} (known: {known})", code="project_unknown")


def search(home: Home, text: str, *, project: str | None = None,
           limit: int = DEFAULT_LIMIT) -> list[SearchResult]:
    """Best matches first; an index that does not exist yet is built first."""
    from storage.search_store import open_index_readonly, search_path

    fts_query(text)  # refuse an empty or oversized text before opening anything
    registry = open_registry(home)
    try:
        project_id = project_id_for(registry, project) if project else None
        if not search_path(home.root).exists():
            rebuild(home)
        index = open_index_readonly(home.root)
        if index is None:
            return []
        try:
            hits = _hits(index, text, project_id, max(1, limit))
        finally:
            index.close()
        frames = {}
        ids = sorted({h.frame_id for h in hits if h.frame_id})
        if ids:
            marks = ", ".join("?" for _ in ids)
            frames = {r[0]: (r[1], r[2]) for r in registry.execute(
                f"SELECT frame_id, title, lifecycle_state FROM frames WHERE frame_id IN ({marks})",
                ids)}
        names = dict(registry.execute("SELECT project_id, name FROM projects").fetchall())
    finally:
        registry.close()
    results = []
    for hit in hits:
        title, state = frames.get(hit.frame_id or "", ("(frame gone)", "gone"))
        results.append(SearchResult(hit.kind, hit.project_id,
                                    str(names.get(hit.project_id, hit.project_id)),
                                    hit.frame_id, str(title), str(state), hit.session_key,
                                    hit.at, hit.anchor, hit.snippet))
    return results


# --------------------------------------------------------------------------- rebuild


def _session_entries(home: Home, project_id: str, frame_id: str, key: str) -> list[Entry]:
    from storage import session_db
    from storage.search_store import Entry

    entries: list[Entry] = []
    with session_db.reading(home.root, key) as conn:
        if conn is None:
            return []
        for row in conn.execute("SELECT id, created_at, content_json, metadata_json FROM"
                                " messages WHERE session_id = ? AND role = 'user'", (key,)):
            try:
                blocks = json.loads(row["content_json"])
                text = " ".join(b.get("text", "") for b in blocks if isinstance(b, dict))
                meta = json.loads(row["metadata_json"] or "{}")
            except (ValueError, AttributeError, TypeError):
                continue
            event = meta.get("event_id") if isinstance(meta, dict) else None
            entries.append(Entry(f"{PROMPT}:{event or row['id']}", PROMPT, project_id,
                                 frame_id, key, row["created_at"], text))
        for row in conn.execute("SELECT id, command, COALESCE(completed_at, started_at) AS at"
                                " FROM command_runs WHERE session_id = ?"
                                " AND completed_at IS NOT NULL", (key,)):
            entries.append(Entry(f"{COMMAND}:{row['id']}", COMMAND, project_id, frame_id, key,
                                 row["at"], row["command"], row["id"]))
        for row in conn.execute("SELECT toolchain, file, code, message, semantic_signature,"
                                " created_at, command_run_id FROM diagnostics"
                                " WHERE session_id = ? ORDER BY created_at", (key,)):
            entries.append(Entry(f"{FAILURE}:{key}:{row['semantic_signature']}", FAILURE,
                                 project_id, frame_id, key, row["created_at"],
                                 failure_body(row), row["command_run_id"]))
    return entries


def rebuild(home: Home) -> int:
    """Index every frame of this host from scratch; returns the number of entries."""
    from storage.search_store import Entry, add_entries, clear, count, open_index
    from storage.session_db import iso

    registry = open_registry(home)
    try:
        frames = registry.execute("SELECT frame_id, project_id FROM frames").fetchall()
        entries: list[Entry] = []
        for row in registry.execute(
                "SELECT b.transition_id, b.brief, b.created_at, f.frame_id, f.project_id,"
                " f.title FROM transition_briefs b JOIN frames f"
                " ON f.frame_id = b.target_frame_id"):
            entries.append(Entry(f"{BRIEF}:{row[0]}", BRIEF, row[4], row[3], None,
                                 iso(int(row[2])), f"{row[5]}\n{row[1]}"))
        for row in registry.execute(
                "SELECT h.transition_id, h.summary, h.next_action, h.source_frame_id,"
                " h.source_session_key, h.created_at, f.project_id FROM completion_handoffs h"
                " JOIN frames f ON f.frame_id = h.source_frame_id"):
            body = row[1] + (f"\nnext: {row[2]}" if row[2] else "")
            entries.append(Entry(f"{HANDOFF}:{row[0]}", HANDOFF, row[6], row[3], row[4],
                                 iso(int(row[5])), body))
        sessions = registry.execute("SELECT frame_id, session_key FROM frame_sessions"
                                    " ORDER BY frame_id, ordinal").fetchall()
    finally:
        registry.close()
    project_of = {r[0]: r[1] for r in frames}
    for frame_id, key in sessions:
        if frame_id in project_of:
            entries += _session_entries(home, project_of[frame_id], frame_id, key)
    entries.sort(key=lambda e: e.at)  # rowid order is time order: hits come newest first
    index = open_index(home.root)
    try:
        clear(index)
        add_entries(index, entries)
        return count(index)
    finally:
        index.close()
