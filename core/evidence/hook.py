"""The hook's evidence write: one event, and for a shell tool its command run.

Called by ``core.hooks.hook_handler`` after the registry commit, best effort. The
order keeps the spec's artifact rule: output files are written and renamed
into place first, then one transaction records the event, the tool run, the
command run, its artifact rows and (for small outputs) its diagnostics. A
failed transaction removes the files it would have named.

Cost: a plain turn only opens the session file; a tool event parses its
payload a second time (``parse_hook`` keeps no content). Output larger than
``INLINE_PARSE_BYTES`` is stored at once but parsed by a detached
``python -m core.evidence.worker`` so the agent's hook does not wait for it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from core.evidence.capture import (
    TOOL_EVENTS,
    CommandFacts,
    HookFacts,
    command_facts,
    prompt_text,
)
from core.model import fast_exit
from core.model.text import shown

if TYPE_CHECKING:
    import sqlite3

    from core.config.home import Home
    from core.providers.hooks import HookEvent
    from storage.session_evidence import CommandRecord, DiagnosticRow

INLINE_PARSE_BYTES = 64 * 1024
WORKER_MODULE = "core.evidence.worker"


def diagnostic_rows(text: str, artifact_id: str | None) -> list[DiagnosticRow]:
    """``core.evidence.diagnostics.parse`` mapped to the spec's columns and closed severities."""
    from core.evidence import diagnostics
    from storage.session_evidence import SEVERITY_BY_DIAGNOSTIC, DiagnosticRow

    return [DiagnosticRow(artifact_id, d.language, d.toolchain.value,
                          SEVERITY_BY_DIAGNOSTIC.get(d.severity.value, "info"), d.file, d.line,
                          d.column, d.code, d.message, d.semantic_signature)
            for d in diagnostics.parse(text)]


def prepare_command(conn: sqlite3.Connection, session_dir: Path, session_key: str,
                    facts: CommandFacts) -> CommandRecord:
    """Write the output files (bounded, budgeted) and parse them when small."""
    from storage import session_db
    from storage.session_evidence import (
        PARSED,
        PENDING,
        SESSION_CAP,
        CommandRecord,
        session_artifact_bytes,
        write_artifact_file,
    )

    base = CommandRecord(facts.command, facts.cwd, facts.finished, facts.exit_code,
                         facts.exit_source, facts.duration_ms, facts.outcome.value,
                         facts.interrupted)
    if not facts.finished:
        return base
    streams = [(name, text) for name, text in (("stdout", facts.stdout),
                                               ("stderr", facts.stderr),
                                               ("output", facts.combined)) if text]
    if not streams:
        return base
    budget = SESSION_CAP - session_artifact_bytes(conn, session_key)
    written, dropped = [], []
    for name, text in streams:
        artifact = write_artifact_file(session_dir, session_db.new_id(), name, text, budget)
        if artifact is None:
            dropped.append(name)
            continue
        budget -= artifact.size_bytes
        written.append(artifact)
    if not written:
        return base._replace(dropped_streams=tuple(dropped))
    stored = sum(a.size_bytes for a in written)
    rows: list[DiagnosticRow] = []
    state = PENDING
    if stored <= INLINE_PARSE_BYTES:
        for artifact in written:
            rows += diagnostic_rows(Path(artifact.path).read_text("utf-8", "replace"),
                                    artifact.artifact_id)
        state = PARSED
    return base._replace(artifacts=tuple(written), diagnostics=tuple(rows),
                   parse_state=state, dropped_streams=tuple(dropped))


def record(home: Home, hook: HookEvent, facts: HookFacts, payload: dict[str, object],
           now: int) -> None:
    """One hook's evidence (raises on a refused file; the caller reports and moves on).

    ``payload`` is the hook's JSON document as ``parse_hook_document`` decoded it.
    """
    from storage import session_db

    key = facts.session_key
    document = None
    if hook.event in TOOL_EVENTS or hook.kind.value == "prompt_submitted":
        document = payload
    command = command_facts(hook.provider.value, hook.event, document) if document else None
    prompt = prompt_text(document) if document and hook.kind.value == "prompt_submitted" \
        else None
    path = session_db.session_db_path(home.root, key)
    pending_run: str | None = None
    conn = session_db.open_session_db(path, now_ms=now)
    ended = hook.kind.value == "session_ended"
    hold = not ended and fast_exit.enabled
    if hold:
        conn.execute(f"PRAGMA wal_autocheckpoint = {fast_exit.WAL_AUTOCHECKPOINT_PAGES}")
    try:
        if facts.frame_id and not _has_attempt(conn, key):  # once per session
            try:
                from core.evidence.tasks import attempt_from_hook

                attempt_from_hook(home, conn, facts, hook.provider.value, now)
            except Exception as exc:  # the hook's own event is still worth recording
                print(f"switchboard: session attempt not recorded: {shown(exc)}", file=sys.stderr)
        task_id = _task_of(conn, facts.frame_id)
        prepared = prepare_command(conn, path.parent, key, command) if command else None
        try:
            event_id = session_db.record_hook_event(
                conn, session_key=key, provider=hook.provider.value,
                project_id=facts.project_id, project_root=facts.project_root,
                frame_id=facts.frame_id, event=hook.event, kind=hook.kind.value,
                now_ms=now, turn_id=hook.turn_id, tool_name=hook.tool_name,
                tool_use_id=hook.tool_use_id, model_id=hook.model,
                notification_type=hook.notification_type, activity=facts.activity,
                failed=hook.event in ("PostToolUseFailure", "PermissionDenied") or (
                    prepared is not None and prepared.outcome == "failed"),
                command=prepared, prompt=prompt,
                task_id=task_id, subagent_id=hook.subagent_id,
                subagent_type=hook.subagent_type)
        except BaseException:
            for artifact in prepared.artifacts if prepared else ():
                Path(artifact.path).unlink(missing_ok=True)  # never a file without its row
            raise
        if ended:
            from storage.session_evidence import sweep_orphans

            sweep_orphans(conn, path.parent, now / 1000)
        if prompt is not None or (prepared is not None and prepared.finished):
            from core.evidence.search_index import after_hook  # the search index, same evidence

            after_hook(home.root, conn, project_id=facts.project_id, frame_id=facts.frame_id,
                       session_key=key, event_id=event_id, at=session_db.iso(now),
                       prompt=prompt, command=prepared.command if prepared else None,
                       finished=prepared is not None and prepared.finished,
                       diagnostics=prepared.diagnostics if prepared else ())
        elif hook.kind.value == "turn_stopped":
            from core.evidence.change_watch import after_stop  # changed files, once per tool turn

            after_stop(conn, home, key, facts.frame_id)
        if prepared is None or not prepared.finished:
            return
        run_id = conn.execute("SELECT command_run_id FROM events WHERE id = ?",
                              (event_id,)).fetchone()[0]
        if prepared.parse_state == "pending":
            pending_run = run_id
        elif prepared.outcome == "passed":
            from core.evidence.debug import record_fixes

            record_fixes(home, facts.project_id, conn, key, run_id, facts.frame_id, now)
    finally:
        if not (hold and _log_is_small(path) and fast_exit.hold_until_exit(conn)):
            conn.close()  # the session's last hook checkpoints and removes its WAL
    if pending_run is not None:  # after the close: the parser starts on a settled file
        spawn_worker(home, key, pending_run, facts)


def _log_is_small(path: Path) -> bool:
    """Whether the session file's -wal is still within ``session_db.WAL_SIZE_LIMIT_BYTES``.

    A process that ends with its connection open leaves the -wal as a crash would, and
    the next one to open the file rebuilds its index from it with nothing marked as
    checkpointed: SQLite then never starts the log again, and a session whose hooks
    all end that way grew its -wal by every hook (32 MB in a 30-minute soak). Past the
    limit the hook closes instead, which checkpoints and removes the log when no one
    else has the file open; that costs the hook one fsync every ~1 MB of evidence."""
    from storage.session_db import WAL_SIZE_LIMIT_BYTES  # loaded by ``record`` already

    try:
        return os.stat(f"{path}-wal").st_size <= WAL_SIZE_LIMIT_BYTES
    except OSError:
        return True


def _has_attempt(conn: sqlite3.Connection, key: str) -> bool:
    """The session's lineage is recorded (see ``storage.session_lineage.has_attempt``;
    asked here so a plain hook imports none of the lineage code)."""
    return conn.execute("SELECT 1 FROM events WHERE session_id = ? AND type = ? LIMIT 1",
                        (key, "attempt_started")).fetchone() is not None


def _task_of(conn: sqlite3.Connection, frame_id: str | None) -> str | None:
    """The frame's task id when its attempt was recorded (tasks.id is the frame id)."""
    if not frame_id:
        return None
    row = conn.execute("SELECT id FROM tasks WHERE id = ?", (frame_id,)).fetchone()
    return row[0] if row else None


def spawn_worker(home: Home, session_key: str, run_id: str, facts: HookFacts) -> None:
    """Parse a big output beside the agent: by the home's running server when there is
    one (``core.model.turn_end``), else in a detached process; the hook returns now."""
    from core.model.turn_end import EVIDENCE, hand_off

    if hand_off(home.run_dir, EVIDENCE, run_id,
                [session_key, run_id, facts.project_id, facts.frame_id or ""]):
        return
    from core.config.capabilities import ENV_CAPABILITY
    from core.model.spawn import spawn_detached

    env = {k: v for k, v in os.environ.items() if k != ENV_CAPABILITY}  # it needs no authority
    env.update(home.child_env())
    argv = [sys.executable, "-m", WORKER_MODULE, session_key, run_id, facts.project_id,
            facts.frame_id or ""]
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    spawn_detached(argv, env)
