"""Files Switchboard writes are private; files it reads from outside are bounded.

The registry holds briefs, handoffs and desktop tokens, session files hold
hook evidence, per-launch files hold settings: none of it is anyone else's
business on a shared machine. Every entry point sets ``PRIVATE_UMASK`` (so
SQLite's own -wal/-shm files and any folder made on the way are private too),
and the helpers here create with explicit modes, so a caller that runs
without the umask (a library user, a test) still gets 0600 files and 0700
folders. An ``OSError`` from the machine (disk full, read-only, permission)
becomes one sentence naming the file and what to do.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from core.model.errors import EnvironmentFailure, SwitchboardError

PRIVATE_UMASK = 0o077
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


# The umask the person ran Switchboard with, while ``set_private_umask`` is in force.
_person_umask: int | None = None
_umask_lock = threading.RLock()


def set_private_umask() -> int:
    """Make everything this process creates owner-only; returns the old umask.

    The old value is kept for ``person_umask``: processes that run the
    person's own work (a tmux server and the agents in its panes) must create
    the person's files with the person's umask, not Switchboard's.
    """
    global _person_umask
    with _umask_lock:
        old = os.umask(PRIVATE_UMASK)
        if _person_umask is None:
            _person_umask = old
    return old


def restore_umask(old: int) -> None:
    """Undo ``set_private_umask`` (an in-process caller such as a test returns)."""
    global _person_umask
    with _umask_lock:
        os.umask(old)
        _person_umask = None


@contextmanager
def person_umask() -> Iterator[None]:
    """Run a child process (tmux: it may start the server the agents run in) under
    the person's own umask. Switchboard's files keep their explicit 0600/0700
    modes meanwhile, so the brief window costs them nothing."""
    with _umask_lock:
        if _person_umask is None:
            yield
            return
        os.umask(_person_umask)
        try:
            yield
        finally:
            os.umask(PRIVATE_UMASK)


def create_private_file(path: str | os.PathLike[str]) -> bool:
    """Create an empty 0600 file if missing (True when this call created it).

    SQLite gives a database's -wal and -shm files the database file's own
    mode, so a database created this way stays private with its companions.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return False
    except OSError as exc:
        raise os_failure(exc, path) or exc from None
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)
    finally:
        os.close(fd)
    return True


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (and missing parents) as 0700; an existing folder is left as is.

    Only folders Switchboard creates are tightened: a person's own project or
    home folder that already exists keeps the mode they chose. A folder only
    Switchboard makes, and especially one in a shared place, goes through
    ``own_dir`` instead, which also refuses an existing folder that is not private.
    """
    path = Path(path)
    missing: list[Path] = []
    cursor = path
    while not cursor.exists() and cursor != cursor.parent:
        missing.append(cursor)
        cursor = cursor.parent
    try:
        for folder in reversed(missing):
            try:
                folder.mkdir(mode=PRIVATE_DIR_MODE)
            except FileExistsError:
                continue  # another process made it first
            os.chmod(folder, PRIVATE_DIR_MODE)  # mkdir's mode is filtered by the umask
    except OSError as exc:
        raise os_failure(exc, path) or exc from None
    return path


class FolderNotPrivate(EnvironmentFailure):
    """A folder Switchboard keeps its own files in is not this user's private folder."""

    code = "folder_not_private"


def check_own_dir(path: str | os.PathLike[str]) -> Path:
    """Refuse ``path`` unless it is a real folder (not a link) of this uid, mode 0700 or tighter.

    Why: a folder in a shared place (``$TMPDIR/switchboard-run-UID``) can be made
    first by another user, who may then swap the sockets and files put in it (an
    agent-tool socket receives every agent's capability and environment). Checked
    with ``lstat``, so a symbolic link planted in its place is refused, not followed.
    The refusal is one line naming the folder and what to do; nothing is changed.
    """
    path = Path(path)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise os_failure(exc, path) or exc from None
    uid = os.getuid()
    if stat.S_ISLNK(info.st_mode):
        reason = "is a symbolic link, not a folder"
        advice = f"remove the link ({path}) so Switchboard can make its own folder"
    elif not stat.S_ISDIR(info.st_mode):
        reason = "is not a folder"
        advice = f"move {path} away so Switchboard can make its own folder"
    elif info.st_uid != uid:
        reason = f"belongs to uid {info.st_uid}, not to you (uid {uid})"
        advice = f"remove {path} (someone else made it) so Switchboard can make its own"
    elif info.st_mode & 0o077:
        reason = f"is open to other users (mode {stat.S_IMODE(info.st_mode):04o})"
        advice = f"run `chmod 700 {path}` (or remove it) and retry"
    else:
        return path
    raise FolderNotPrivate(f"{path} {reason}: Switchboard keeps its own files only in a "
                           f"private folder of yours (mode 0700); {advice}{NOTHING_CHANGED}")


def own_dir(path: str | os.PathLike[str]) -> Path:
    """``private_dir`` for a folder that is Switchboard's own (run folders, sockets' folders,
    per-user temp folders): made 0700 when missing, and refused by ``check_own_dir``
    when it already exists as anything but this user's private folder.

    ``private_dir`` alone leaves an existing folder as it is, which is right for the
    person's own project or home folder and wrong for a folder only Switchboard makes.
    """
    return check_own_dir(private_dir(path))


def write_private(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` to ``path`` as a 0600 file, atomically (a temp file, then rename).

    On a full or read-only disk the temp file is removed and the old file (if
    any) is untouched; the error names the path and what to do.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
        try:
            os.fchmod(fd, PRIVATE_FILE_MODE)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise os_failure(exc, path) or exc from None
    return path


class FileTooLarge(SwitchboardError):
    code = "file_too_large"


def append_log_line(path: str | os.PathLike[str], line: str, limit: int) -> None:
    """One line to a private log (0600, opened per line so no file is held open, never
    through a symlink), started over once past ``limit`` bytes; a failure is ignored:
    a log must never stop the process that writes it."""
    try:
        size = os.lstat(path).st_size
    except OSError:
        size = 0
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    if size > limit:
        flags |= os.O_TRUNC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return
    try:
        os.write(fd, (line + "\n").encode("utf-8", "backslashreplace"))
    except OSError:
        pass
    finally:
        os.close(fd)


def read_bounded(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """Read at most ``limit`` bytes of ``path``; a larger file is refused in words.

    Reads ``limit + 1`` bytes, so a huge (or endless, like a FIFO) file is never
    buffered whole. ``FileNotFoundError`` and other ``OSError``s pass through
    for the caller to word.
    """
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(f"{what} {path} is larger than {limit} bytes; it cannot be a "
                           f"valid {what}: check what wrote it (nothing was changed)")
    return data


_OS_WHAT = {
    errno.ENOSPC: ("disk_full", "disk full while writing {path}: free space and retry"),
    errno.EDQUOT: ("disk_full", "disk quota exceeded while writing {path}: free space "
                                "and retry"),
    errno.EROFS: ("read_only", "{path} is on a read-only file system: remount it writable "
                               "or point SWITCHBOARD_HOME elsewhere, then retry"),
    errno.EACCES: ("permission_denied", "permission denied on {path}: fix its permissions "
                                        "and retry"),
    errno.EPERM: ("permission_denied", "{path} may not be changed (immutable or not "
                                       "yours): fix that and retry"),
    errno.EIO: ("io_error", "the disk failed while writing {path}: check the disk, then "
                            "retry"),
}


NOTHING_CHANGED = "; nothing was changed"
STOPPED = "; the command stopped there"


def os_failure(exc: BaseException, path: str | os.PathLike[str] | None = None, *,
               tail: str = NOTHING_CHANGED) -> EnvironmentFailure | None:
    """The EnvironmentFailure an ``OSError`` stands for, or None when it is something else.

    ``tail`` says what happened to the state: callers that wrote atomically
    say nothing changed; a catch-all that cannot know says the command stopped.
    """
    if not isinstance(exc, OSError) or exc.errno not in _OS_WHAT:
        return None
    where = path if path is not None else (exc.filename or "a Switchboard file")
    code, template = _OS_WHAT[exc.errno]
    return EnvironmentFailure(template.format(path=where) + tail, code=code)


def file_stamps(paths: Iterable[str]) -> tuple[tuple[int, int], ...]:
    """(mtime in ns, size) of each file, (0, 0) for one that is missing: a cheap "did
    anything change" for files a SQLite commit touches (no lock, no SQL)."""
    stamps = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            stamps.append((0, 0))
        else:
            stamps.append((info.st_mtime_ns, info.st_size))
    return tuple(stamps)
