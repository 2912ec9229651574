"""Removing one session's evidence folder (`switchboard prune`).

``$SWITCHBOARD_HOME/sessions/<safe key>/`` is storage's own: the session DB, its
``-wal``/``-shm`` and the ``artifacts`` folder of command outputs
(``storage.session_db``, ``storage.session_evidence``). Retention drops a folder
whole: a half-pruned session DB (rows gone, artifact files left, or the reverse)
would be evidence that lies. The registry's rows (the session, its frame, its
membership) stay, so a closed frame can still be reopened and its session resumed
by exact id; only what the hooks recorded about it goes.

Which sessions may go is decided by ``core.fleet.retention`` (closed frames only,
never a live runtime); this module only measures and removes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from storage.session_db import session_db_path


def evidence_folder(root: Path, session_key: str) -> Path:
    """The session's evidence folder (which may not exist: no hook ever wrote one)."""
    return session_db_path(root, session_key).parent


def folder_bytes(folder: Path) -> int:
    """Bytes of every regular file under ``folder`` (0 when it does not exist)."""
    if not folder.is_dir():
        return 0
    return sum(path.stat().st_size for path in folder.rglob("*")
               if path.is_file() and not path.is_symlink())


def remove_session_evidence(root: Path, session_key: str) -> int:
    """Remove the session's evidence folder; the bytes it held (0 if there was none)."""
    folder = evidence_folder(root, session_key)
    if not folder.is_dir() or folder.is_symlink():
        return 0
    size = folder_bytes(folder)
    shutil.rmtree(folder)
    return size
