"""Turn a file path into the SQLite URI that names exactly that file.

SQLite reads ``file:`` URIs by RFC 3986 rules: ``?`` starts the query, ``#``
starts a fragment and ``%XX`` is decoded. A path pasted into ``file:{path}``
therefore opens a different file as soon as it contains one of those
characters (``team#1.sqlite3`` opens ``team``, ``b%41`` opens ``bA``). Every
URI open in Switchboard goes through ``sqlite_uri`` so no caller can forget.
Kept free of other imports: the hook path uses it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storage.held_files import HeldConnection
from urllib.parse import quote


def canonical(path: str | os.PathLike[str]) -> Path:
    """The one absolute, symlink-free spelling of ``path`` (it need not exist yet).

    Everything derived from a database's location (the file SQLite opens, the
    lock folder beside it) is computed from this form, so two spellings of the
    same file cannot end up with two sets of locks.
    """
    return Path(path).expanduser().resolve()


def sqlite_uri(path: str | os.PathLike[str], **params: str | int) -> str:
    """``file:`` URI for ``path`` with query ``params`` (``mode="ro"``, ``immutable=1``).

    The path is made absolute and every byte outside RFC 3986's unreserved set
    and ``/`` is percent-encoded (``?``, ``#``, ``%``, spaces, non-ASCII), the
    way ``pathname2url`` does, so SQLite decodes it back to the same bytes.
    """
    absolute = os.fsencode(os.path.abspath(os.fspath(path)))
    encoded = quote(absolute, safe="/")
    query = "&".join(f"{key}={quote(str(value), safe='')}" for key, value in params.items())
    # An empty authority ("file://" then the absolute path) keeps a path that
    # starts with "//" from being read as a host name.
    return f"file://{encoded}" + (f"?{query}" if query else "")


def open_uri(path: str | os.PathLike[str], mode: str, **connect: Any) -> HeldConnection:
    """``sqlite3.connect`` on exactly ``path`` (``mode``: ``ro`` or ``rw``, never created).

    The one place outside ``storage.connection`` where a file is opened: the hook
    path's lean reads (a few milliseconds, no diagnosis, no PRAGMAs) come here, so
    every connection Switchboard makes is made in ``storage/``. The connection is
    remembered by ``storage.held_files`` while open, so no header read of this
    process drops its locks.
    """
    from storage import held_files

    return held_files.connect(Path(path), sqlite_uri(path, mode=mode), uri=True, **connect)
