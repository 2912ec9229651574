"""Attention outside the view: who needs the person, seen from anywhere in tmux.

The badge in a view's navigator is only seen by someone looking at that view.
A person running many agents wants the count in every tmux status line and a
nudge when an agent they are *not* looking at needs input or finishes a turn.

Who does the work: the hook records activity and, when it changed, starts one
detached ``switchboard attention --publish`` (``spawn_publish``), so the agent's
hook never waits on tmux or a notifier. That process reads the registry once,
then uses at most two tmux processes: ``list-clients`` (who is looking at
what) and one batch that sets the ``@sb_attention`` server option (the status
segment reads it: no polling process per status refresh) and shows the
message on the other clients. The bell and the desktop notification (OSC 9
and OSC 777, which terminals such as iTerm2, kitty, WezTerm, foot and
Ghostty show; ``notify-send`` when a desktop notifier exists) go to the
client terminals directly.

"Looking at" is exact: a client whose current window is the frame's view
window while the frame is that view's active frame. Such a client is never
nudged, and neither is any client when every client looks at the frame.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from core.hooks.attention_counts import (
    NEEDS_INPUT,
    OPTION,
    TURN_FINISHED,
    AttentionCounts,
    read_counts,
    spawn_publish,
    spawn_segment,
)
from core.model.text import printable_only, shown

__all__ = ["AttentionCounts", "read_counts", "spawn_publish", "spawn_segment"]

if TYPE_CHECKING:  # the navigator CLI imports this module: nothing heavy at import time
    import sqlite3

    from core.config.config import AttentionConfig
    from core.config.registry import OpenRegistry

SEGMENT_FORMAT = "#{" + OPTION + "}"
TMUX_TIMEOUT_S = 5.0


class AttentionKind(StrEnum):
    NEEDS_INPUT = NEEDS_INPUT
    TURN_FINISHED = TURN_FINISHED


@dataclass(frozen=True)
class Subject:
    """The frame an attention event is about, and where it is shown."""

    frame_id: str
    title: str
    project: str
    view_window: str | None  # tmux window id of its view, when it has one
    is_active: bool  # the view's active frame (shown in main)


@dataclass(frozen=True)
class Client:
    name: str
    tty: str
    window_id: str


@dataclass(frozen=True)
class Notice:
    """One nudge for one client terminal."""

    client: Client
    text: str


def read_subject(conn: sqlite3.Connection, frame_id: str) -> Subject | None:
    row = conn.execute(
        "SELECT f.frame_id, f.title, pr.name, v.tmux_window_id,"
        " v.active_frame_id = f.frame_id FROM frames f"
        " JOIN projects pr ON pr.project_id = f.project_id"
        " LEFT JOIN frame_placements p ON p.frame_id = f.frame_id"
        " LEFT JOIN user_views v ON v.view_id = p.view_id WHERE f.frame_id = ?",
        (frame_id,)).fetchone()
    if row is None:
        return None
    return Subject(frame_id=row[0], title=row[1], project=row[2], view_window=row[3],
                   is_active=bool(row[4]))


def message_for(subject: Subject, kind: AttentionKind) -> str:
    what = "needs input" if kind is AttentionKind.NEEDS_INPUT else "finished its turn"
    return f"Switchboard: {shown(subject.project)} / {shown(subject.title)} {what}"


def looking_at(subject: Subject, client: Client) -> bool:
    return subject.is_active and subject.view_window is not None and \
        client.window_id == subject.view_window


def notices(subject: Subject, kind: AttentionKind, clients: Sequence[Client]) -> list[Notice]:
    """Nudges for every client not looking at the frame; none if someone is."""
    if any(looking_at(subject, c) for c in clients):
        return []
    text = message_for(subject, kind)
    return [Notice(c, text) for c in clients]


NUDGE_COALESCE_S = 5.0
"""One nudge per client, frame and kind in this many seconds: 30 turn ends in 3.5 s
were 31 bells and desktop notifications (the status segment still counts each)."""


def coalesce(notices_: Sequence[Notice], frame_id: str, kind: AttentionKind,
             claims: Path, now: float) -> list[Notice]:
    """The notices no other publisher sent (or is sending) within NUDGE_COALESCE_S.

    One small file per client, frame and kind holds the time of its last nudge,
    under an ``flock``: concurrent publishers (the hook starts one per turn end)
    serialize on it, and one that finds it held skips, since that nudge is being
    sent right now. Best effort: a file that cannot be used lets the nudge through.
    """
    import fcntl

    from core.model.digest import sha256_hex

    kept = []
    for notice in notices_:
        key = sha256_hex("\0".join((notice.client.tty, frame_id, kind.value)).encode())
        try:
            claims.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(claims / key[:32], os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            kept.append(notice)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            last = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            if last and now - float(last) < NUDGE_COALESCE_S:
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{now:.3f}".encode(), 0)
            kept.append(notice)
        except BlockingIOError:
            continue  # another publisher is nudging this client about it now
        except (OSError, ValueError):
            kept.append(notice)
        finally:
            os.close(fd)
    return kept


def parse_clients(lines: Sequence[str]) -> list[Client]:
    clients = []
    for line in lines:
        parts = line.split("\t")
        if len(parts) == 3 and all(parts):
            clients.append(Client(*parts))
    return clients


def is_default_status_right(current: str, default: str) -> bool:
    return current.strip() == default.strip()


# --------------------------------------------------------------------------- tmux + terminals


def _tmux(socket: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", "-S", socket, *args], capture_output=True, text=True,
                          timeout=TMUX_TIMEOUT_S, stdin=subprocess.DEVNULL)


def tmux_default_status_right() -> str:
    """tmux's own default, read from a throwaway server with no config (no guessing per
    version); the person's value is compared with it."""
    probe = f"sb-probe-{os.getpid()}"
    try:
        done = subprocess.run(["tmux", "-f", "/dev/null", "-L", probe, "start-server", ";",
                               "show-options", "-gv", "status-right"], capture_output=True,
                              text=True, timeout=TMUX_TIMEOUT_S, stdin=subprocess.DEVNULL)
    finally:
        subprocess.run(["tmux", "-L", probe, "kill-server"], capture_output=True,
                       timeout=TMUX_TIMEOUT_S)
    return done.stdout.rstrip("\n")


def install_segment(socket: str) -> bool:
    """Prefix the global status-right with the attention segment, only when the person
    kept tmux's default (their own status line is theirs). True when installed now."""
    current = _tmux(socket, "show-options", "-gv", "status-right")
    if current.returncode != 0 or SEGMENT_FORMAT in current.stdout:
        return False
    if not is_default_status_right(current.stdout, tmux_default_status_right()):
        return False
    value = SEGMENT_FORMAT + current.stdout.rstrip("\n")
    done = _tmux(socket, "set-option", "-g", "status-right", value, ";",
                 "set-option", "-g", "status-right-length", "90")
    return done.returncode == 0


CHECKED_OPTION = "@sb_attention_checked"


def ensure_segment(socket: str) -> None:
    """Check once per server (marked by an option) whether the segment can go in: a
    person who changes their status line later is never overridden."""
    marker = _tmux(socket, "show-options", "-gqv", CHECKED_OPTION)
    if marker.returncode != 0 or marker.stdout.strip():
        return
    install_segment(socket)
    _tmux(socket, "set-option", "-g", CHECKED_OPTION, "1")


def list_clients(socket: str) -> list[Client]:
    done = _tmux(socket, "list-clients", "-F", "#{client_name}\t#{client_tty}\t#{window_id}")
    return parse_clients(done.stdout.splitlines()) if done.returncode == 0 else []


def publish(socket: str, config: AttentionConfig, counts: AttentionCounts,
            sent: Sequence[Notice]) -> None:
    """One tmux process for the option and the messages; terminals get bell/OSC."""
    batch: list[str] = []
    if config.status_line:
        batch += ["set-option", "-g", OPTION, counts.segment()]
    if config.message:
        for notice in sent:
            if batch:
                batch.append(";")
            batch += ["display-message", "-c", notice.client.name, "-d", "4000",
                      notice.text.replace("#", "##")]
    if batch:
        _tmux(socket, *batch)
    for notice in sent:
        _to_terminal(notice, bell=config.bell, desktop=config.desktop)
    if config.desktop and sent:
        _notify_send(sent[0].text)


def publish_change(opened: OpenRegistry, frame_id: str | None,
                   event: str | None) -> tuple[AttentionCounts, list[Notice]]:
    """What ``switchboard attention --publish`` and the server's turn-end work do: the
    segment installed (once per tmux server), the counts set and the clients not looking
    at ``frame_id`` nudged about ``event`` (coalesced per frame and kind). Returns the
    counts and the nudges sent."""
    counts = read_counts(opened.conn)
    settings = opened.config.attention
    # the stage's own rule (core.runtime.stage.socket_path_for), without the stage
    socket = opened.config.tmux.socket_path or str(opened.home.root / "tmux.sock")
    if settings.status_line:
        ensure_segment(socket)
    subject = read_subject(opened.conn, frame_id) if frame_id else None
    sent: list[Notice] = []
    if subject is not None and event:
        kind = AttentionKind(event)
        sent = coalesce(notices(subject, kind, list_clients(socket)), subject.frame_id, kind,
                        opened.home.run_dir / "attention", time.time())
    publish(socket, settings, counts, sent)
    return counts, sent


def terminal_bytes(text: str, *, bell: bool, desktop: bool) -> bytes:
    """BEL and the OSC 9 / OSC 777 desktop notifications. They are written to the client's
    own terminal (its tty), outside tmux, so no tmux passthrough wrapping is needed;
    control characters of the text (and ``;``, the OSC 777 field separator) are dropped so
    it cannot end the sequence early."""
    clean = printable_only(text).replace(";", "")
    out = b""
    if desktop:
        out += f"\x1b]9;{clean}\x07".encode()
        out += f"\x1b]777;notify;Switchboard;{clean}\x07".encode()
    if bell:
        out += b"\x07"
    return out


def _to_terminal(notice: Notice, *, bell: bool, desktop: bool) -> None:
    data = terminal_bytes(notice.text, bell=bell, desktop=desktop)
    if not data or not notice.client.tty.startswith("/dev/"):
        return
    try:
        fd = os.open(notice.client.tty, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return  # the client went away: nothing to nudge
    try:
        _write_all(fd, data, deadline=time.monotonic() + TERMINAL_WRITE_S)
    finally:
        os.close(fd)


TERMINAL_WRITE_S = 0.2
"""How long a nudge waits on a terminal whose buffer is full. A blocked client tty
held every publisher 2 s (twelve at once); a bell that cannot be written at once
is worth little, and the status segment already says it."""


def _write_all(fd: int, data: bytes, *, deadline: float) -> None:
    """Non-blocking writes, waiting (bounded) while the terminal's buffer is full: a busy
    terminal gets the nudge a moment later instead of never; a stuck one is given up."""
    import select

    while data:
        try:
            data = data[os.write(fd, data):]
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            select.select([], [fd], [], left)
        except OSError:
            return


def _notify_send(text: str) -> None:
    tool = shutil.which("notify-send")
    if tool is None or not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return
    try:
        subprocess.run([tool, "--app-name=Switchboard", "Switchboard", text],
                       capture_output=True, timeout=TMUX_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        pass
