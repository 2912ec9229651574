"""How a person names a frame, view or project on the command line: one resolver.

Rows are stored by UUID, but a person knows them by title or name
(``switchboard frame show "Add tests"``). Every command that takes a FRAME,
VIEW or PROJECT resolves its argument here, so they all accept the same
spellings and refuse the same way:

1. the exact id;
2. the exact name (a frame's title, a project's name; a view is named by its
   project), or ``project/title`` for a frame;
3. the same, ignoring case;
4. a prefix of the id (at least ``MIN_PREFIX`` characters, as ``list`` prints
   them in full and ``humanize`` shortens unknown ones to 8).

Text holding a control character is only ever compared with ids: a name typed
with an escape sequence in it names nothing (a row stored with one, from before
names were checked, is named by its id).

The first step that matches anything decides: one match is the answer, more
than one is refused with every candidate named (never a guess: a command may
stop an agent or close a task). Pure: the candidates come from the caller
(``core.state.names`` reads them from the registry, ``Config`` has the
projects), so the rules are unit-tested without a registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from core.model.errors import Conflict, NotFound
from core.model.text import first_unsafe_char, shown

MIN_PREFIX = 4
"""The shortest id prefix accepted: shorter ones match by accident."""

MAX_LISTED = 8
"""Candidates named in one refusal line; the rest are counted."""


class AmbiguousName(Conflict):
    """A name (or id prefix) matches more than one row: nothing was done."""

    code = "ambiguous_name"


@dataclass(frozen=True)
class Named:
    """One row a name may resolve to."""

    id: str
    name: str
    """The title or name a person types; empty when the row cannot be named (a retired
    view: its project's name belongs to the live one)."""
    scope: str = ""
    """The project's name for a frame (``scope/name`` names it within that project)."""
    note: str = ""
    """What tells candidates apart in a refusal (``open task``, ``closed``)."""

    def label(self, id_chars: int = 8) -> str:
        """How a refusal names this candidate: the spelling that picks it, and enough of
        its id to pick it instead."""
        full = f"{self.scope}/{self.name}" if self.scope and self.name else self.name
        extra = f", {self.note}" if self.note else ""
        return f"{shown(full) or '(unnamed)'} ({shown(self.id[:id_chars])}{extra})"


def _spellings(row: Named) -> tuple[str, ...]:
    if not row.name:
        return ()
    return (row.name, f"{row.scope}/{row.name}") if row.scope else (row.name,)


def _steps(text: str) -> tuple[Callable[[Named], bool], ...]:
    folded = text.casefold()
    prefix = text.lower() if len(text) >= MIN_PREFIX else None
    return (
        lambda row: row.id == text,
        lambda row: text in _spellings(row),
        lambda row: any(folded == s.casefold() for s in _spellings(row)),
        lambda row: prefix is not None and row.id.lower().startswith(prefix),
    )


def resolve(text: str, candidates: Iterable[Named], *, what: str, listing: str) -> Named:
    """The one row ``text`` names among ``candidates``.

    ``what`` is the row's kind in words (``frame``), ``listing`` the command that
    lists them (``switchboard frame list``); both go into the one-line refusals:
    NotFound when nothing matches, AmbiguousName (listing the candidates) when
    several do.
    """
    rows: Sequence[Named] = tuple(candidates)
    steps = _steps(text)
    if first_unsafe_char(text) is not None:
        # A control character names nothing a person typed: only an id could match (and
        # none holds one). A row stored with one in its name, from before names were
        # checked, is named by its id, as completion offers it.
        steps = steps[:1]
    for step in steps:
        found = [row for row in rows if step(row)]
        if len(found) == 1:
            return found[0]
        if found:
            raise AmbiguousName(_ambiguous(text, found, what))
    names = sorted({shown(row.name) for row in rows if row.name})
    known = (f" (known: {', '.join(names)})" if len(names) <= MAX_LISTED
             else f" ({len(names)} known)") if names else f" (no {what} yet)"
    raise NotFound(f"unknown {what} {shown(text)!r}{known}: give its name, an id prefix or "
                   f"its id; `{listing}` shows them")


def _ambiguous(text: str, found: Sequence[Named], what: str) -> str:
    ids = {row.id for row in found}
    chars = next((n for n in range(8, max(len(i) for i in ids) + 1)
                  if len({i[:n] for i in ids}) == len(ids)), None)
    listed = "; ".join(row.label(chars or 36) for row in found[:MAX_LISTED])
    more = f"; and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
    scoped = " as PROJECT/TITLE or" if any(row.scope for row in found) else ""
    return (f"{shown(text)!r} names {len(found)} {what}s: {listed}{more}; "
            f"name one{scoped} by its id (nothing was done)")
