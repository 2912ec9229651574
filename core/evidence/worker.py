"""``python -m core.evidence.worker SESSION_KEY RUN_ID PROJECT_ID FRAME_ID``.

The detached half of a hook's evidence write for a big output: the hook has
stored the output (bounded artifacts) and the command run with its diagnostics
``pending``; this process parses the stored files, records the diagnostics in
one transaction and, for a passing run, the debug records it proves. It runs
with the hook's home (``SWITCHBOARD_HOME``/``SWITCHBOARD_CONFIG``) and writes
its own failure, if any, to ``evidence-worker.log`` in the session's folder.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.config.home import Home


def run(session_key: str, run_id: str, project_id: str, frame_id: str | None,
        home: Home | None = None) -> int:
    """Parse the run's stored outputs (``home``: the environment's when None; the home's
    server passes its own)."""
    from core.config.home import Home
    from core.evidence.debug import later_pass, record_fixes
    from core.evidence.hook import diagnostic_rows
    from storage import session_db
    from storage.session_evidence import complete_parse

    home = home or Home.from_env()
    path = session_db.session_db_path(home.root, session_key)
    conn = session_db.open_session_db(path, create=False)
    try:
        artifacts = conn.execute("SELECT id, path FROM artifacts WHERE command_run_id = ?"
                                 " ORDER BY rowid", (run_id,)).fetchall()
        rows = []
        for artifact_id, artifact_path in artifacts:
            rows += diagnostic_rows(Path(artifact_path).read_text("utf-8", "replace"),
                                    artifact_id)
        now = time.time_ns() // 1_000_000
        if complete_parse(conn, session_key, run_id, rows, session_db.iso(now),
                          session_db.new_id):
            # A passing run fixes what failed before it; a failing one may already have
            # been fixed by a run the hook saw while this parse was pending.
            passing = later_pass(conn, session_key, run_id) or run_id
            record_fixes(home, project_id, conn, session_key, passing, frame_id or None, now)
            from core.evidence.search_index import after_parse  # the failures become searchable

            after_parse(home.root, conn, session_key, run_id, project_id, frame_id or None)
    finally:
        conn.close()
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: python -m core.evidence.worker SESSION_KEY RUN_ID PROJECT_ID FRAME_ID",
              file=sys.stderr)
        return 2
    try:
        return run(argv[0], argv[1], argv[2], argv[3])
    except Exception:
        from core.config.home import Home
        from storage import session_db

        folder = session_db.session_db_path(Home.from_env().root, argv[0]).parent
        if folder.is_dir():
            fd = os.open(folder / "evidence-worker.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                         0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as log:
                log.write(traceback.format_exc())
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
