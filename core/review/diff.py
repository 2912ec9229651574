"""What a frame changed: ``git diff BASE`` in its checkout, parsed into files and hunks.

The change is everything since the frame's base ref, committed and not:
``git diff BASE`` compares the working tree with that commit, and files git
does not track yet (``ls-files --others --exclude-standard``) are added as new
files, so an agent's freshly created module is part of its review. Binary
files are listed without lines. No Textual here; the navigator's diff screen
and ``switchboard frame diff`` both render this model.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import subprocess
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from core.model.git import run_git
from core.review.model import ReviewComment

GIT_TIMEOUT_S = 20.0
#: A diff bigger than this is cut (the screen says so); 5,000-line changes fit easily.
MAX_DIFF_BYTES = 16 * 1024 * 1024
MAX_UNTRACKED_BYTES = 1024 * 1024
#: Untracked files read into a diff at most (a folder .gitignore forgot can hold
#: thousands); the rest are listed without lines, and ``truncated`` says so.
MAX_UNTRACKED_FILES = 300
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


class LineKind(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CONTEXT = "context"
    NOTE = "note"  # "\ No newline at end of file"


class FileStatus(StrEnum):
    ADDED = "added"
    DELETED = "deleted"
    MODIFIED = "modified"
    RENAMED = "renamed"
    UNTRACKED = "untracked"


@dataclass(frozen=True)
class DiffLine:
    kind: LineKind
    text: str
    old_no: int | None
    new_no: int | None


@dataclass(frozen=True)
class Hunk:
    header: str
    old_start: int
    new_start: int
    lines: tuple[DiffLine, ...]


@dataclass(frozen=True)
class FileDiff:
    path: str
    old_path: str | None
    status: FileStatus
    added: int
    removed: int
    binary: bool = False
    hunks: tuple[Hunk, ...] = ()


@dataclass(frozen=True)
class FrameDiff:
    """A frame's change since ``base_ref`` in ``checkout``; ``problem`` says why it is
    empty when git could not answer (no repository, an unknown base)."""

    frame_id: str
    title: str
    checkout: str
    base_ref: str | None
    files: tuple[FileDiff, ...] = ()
    truncated: bool = False
    problem: str | None = None
    comments: tuple[ReviewComment, ...] = field(default=())

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)


def git(cwd: str | Path, *args: str, timeout: float = GIT_TIMEOUT_S
        ) -> subprocess.CompletedProcess[bytes]:
    """One git call, output as bytes (paths and contents are not always UTF-8), with the
    checkout's own code-running settings off (``core.model.git``)."""
    try:
        return run_git(cwd, *args, timeout=timeout, config=(("core.quotePath", "false"),),
                       work_tree=checkout_top(cwd))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(["git", *args], 1, b"", str(exc).encode())


def checkout_top(path: str | Path) -> Path | None:
    """The folder holding the ``.git`` (folder or worktree file) nearest above ``path``:
    the checkout's own working tree, whatever its config's ``core.worktree`` says (an
    agent could point that at the home folder and have a tracked ``.ssh/id_rsa`` read
    from there into the diff)."""
    try:
        start = Path(path).resolve()
    except OSError:
        return None
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def resolve_base(checkout: str, base_ref: str | None) -> tuple[str | None, str | None]:
    """(commit, problem): the recorded base, else HEAD (only uncommitted changes then)."""
    if not Path(checkout).is_dir():
        return None, f"the checkout {checkout} is gone"
    ref = base_ref or "HEAD"
    done = git(checkout, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if done.returncode != 0:
        inside = git(checkout, "rev-parse", "--is-inside-work-tree")
        if inside.returncode != 0:
            return None, f"{checkout} is not a git checkout"
        return None, f"git does not know the base {ref[:12]} in {checkout}"
    return _decode(done.stdout).strip(), None


def untracked_files(checkout: str) -> list[str]:
    done = git(checkout, "ls-files", "--others", "--exclude-standard", "-z")
    if done.returncode != 0:
        return []
    return [_decode(p) for p in done.stdout.split(b"\0") if p]


def changed_files(checkout: str, base: str) -> tuple[str, ...]:
    """Paths changed since ``base`` (tracked and untracked): plumbing only, no content."""
    done = git(checkout, "diff", "--name-only", "-z", "--no-renames", base, "--")
    if done.returncode != 0:
        return ()
    names = {_decode(p) for p in done.stdout.split(b"\0") if p}
    names.update(untracked_files(checkout))
    return tuple(sorted(names))


def read_diff(checkout: str, base: str) -> tuple[list[FileDiff], bool]:
    """Parsed ``git diff BASE`` plus untracked files; (files, truncated)."""
    done = git(checkout, "diff", "--no-color", "-M", "-U3", base, "--")
    raw = done.stdout if done.returncode == 0 else b""
    truncated = len(raw) > MAX_DIFF_BYTES
    files = parse_diff(_decode(raw[:MAX_DIFF_BYTES]))
    for number, path in enumerate(untracked_files(checkout)):
        if number < MAX_UNTRACKED_FILES:
            files.append(_untracked(Path(checkout), path))
        else:
            files.append(FileDiff(path, None, FileStatus.UNTRACKED, 0, 0))
            truncated = True
    files.sort(key=lambda f: f.path)
    return files, truncated


class EntryKind(StrEnum):
    """What a path in the checkout is, seen without following it."""

    FILE = "file"
    SYMLINK = "symlink"
    OTHER = "other"  # a FIFO, socket, device or folder: nothing to read


@dataclass(frozen=True)
class CheckoutEntry:
    """A checkout path as git sees it: a regular file's first bytes, or a symlink's target
    (git stores a link as its target path and never follows it)."""

    kind: EntryKind
    data: bytes = b""
    cut: bool = False  # the file holds more than the limit


def read_entry(checkout: str | Path, path: str, limit: int) -> CheckoutEntry:
    """``path`` (relative, ``/``-separated, as git prints it) inside ``checkout``, without
    following any symlink in it and without blocking.

    The agent owns the checkout: an untracked ``link -> /etc/shadow`` must show as a
    link, not as the file's contents, and a FIFO must not hang the reader. Each folder
    on the way is opened ``O_NOFOLLOW`` from the one before (no swapped-in folder link
    between git's listing and this read), the leaf ``O_NOFOLLOW|O_NONBLOCK``, and only
    a regular file (``fstat``) is read, at most ``limit`` bytes. Raises ``OSError``
    when the path is gone, unreadable or not a path inside the checkout.
    """
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise OSError(errno.EINVAL, "not a path inside the checkout", path)
    folder = os.open(checkout, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        try:
            handle = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                             | os.O_NOCTTY, dir_fd=folder)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.EMLINK):  # EMLINK: the BSDs' answer
                raise
            target = os.readlink(parts[-1], dir_fd=folder)
            return CheckoutEntry(EntryKind.SYMLINK, os.fsencode(target))
        try:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                return CheckoutEntry(EntryKind.OTHER)
            chunks: list[bytes] = []
            left = limit + 1
            while left > 0:
                chunk = os.read(handle, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        finally:
            os.close(handle)
    finally:
        os.close(folder)
    data = b"".join(chunks)
    return CheckoutEntry(EntryKind.FILE, data[:limit], cut=len(data) > limit)


def _untracked(root: Path, path: str) -> FileDiff:
    try:
        entry = read_entry(root, path, MAX_UNTRACKED_BYTES)
    except OSError:
        return FileDiff(path, None, FileStatus.UNTRACKED, 0, 0)
    if entry.kind is EntryKind.OTHER:
        return FileDiff(path, None, FileStatus.UNTRACKED, 0, 0)
    if entry.kind is EntryKind.SYMLINK:
        line = DiffLine(LineKind.ADDED, _decode(entry.data), None, 1)
        hunk = Hunk("@@ -0,0 +1 @@ (new symlink, not yet tracked)", 0, 1,
                    (line, DiffLine(LineKind.NOTE, "No newline at end of file", None, None)))
        return FileDiff(path, None, FileStatus.UNTRACKED, 1, 0, hunks=(hunk,))
    data = entry.data
    if b"\0" in data[:8192]:
        return FileDiff(path, None, FileStatus.UNTRACKED, 0, 0, binary=True)
    lines = _decode(data).splitlines()
    body = tuple(DiffLine(LineKind.ADDED, text, None, n) for n, text in enumerate(lines, 1))
    hunk = Hunk(f"@@ -0,0 +1,{len(lines)} @@ (new file, not yet tracked)", 0, 1, body)
    return FileDiff(path, None, FileStatus.UNTRACKED, len(lines), 0,
                    hunks=(hunk,) if lines else ())


def _unquote(name: str) -> str:
    """Git's C-style quoting of a path ("a\\tb", octal bytes) undone."""
    if not (len(name) >= 2 and name[0] == name[-1] == '"'):
        return name
    body = name[1:-1]
    out = bytearray()
    index = 0
    simple = {"n": 10, "t": 9, '"': 34, "\\": 92, "a": 7, "b": 8, "f": 12, "r": 13, "v": 11}
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body):
            nxt = body[index + 1]
            if nxt in simple:
                out.append(simple[nxt])
                index += 2
                continue
            if nxt.isdigit() and index + 3 < len(body) + 1:
                out.append(int(body[index + 1:index + 4], 8) & 0xFF)
                index += 4
                continue
        out += char.encode()
        index += 1
    return out.decode("utf-8", "replace")


def _strip_prefix(name: str) -> str:
    name = _unquote(name.strip())
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse_diff(text: str) -> list[FileDiff]:
    """Unified diff text (``git diff``) -> files with hunks and line numbers."""
    files: list[FileDiff] = []
    current: dict[str, object] | None = None
    hunks: list[Hunk] = []
    lines: list[DiffLine] = []
    header = ""
    old_no = new_no = old_start = new_start = 0

    def close_hunk() -> None:
        nonlocal lines
        if header:
            hunks.append(Hunk(header, old_start, new_start, tuple(lines)))
        lines = []

    def close_file() -> None:
        nonlocal hunks, header
        if current is None:
            return
        close_hunk()
        added = sum(1 for h in hunks for x in h.lines if x.kind is LineKind.ADDED)
        removed = sum(1 for h in hunks for x in h.lines if x.kind is LineKind.REMOVED)
        path = str(current.get("new") or current.get("old") or current.get("git_b") or "")
        old = current.get("old")
        status = FileStatus(str(current.get("status", FileStatus.MODIFIED)))
        if status is FileStatus.DELETED:
            path = str(old or current.get("git_a") or path)
        files.append(FileDiff(path, str(old) if old and old != path else None, status,
                              added, removed, bool(current.get("binary")), tuple(hunks)))
        hunks, header = [], ""

    for raw in text.split("\n"):
        if raw.startswith("diff --git "):
            close_file()
            current = {}
            names = raw[len("diff --git "):]
            if names.startswith('"') or " b/" in names:
                split = names.rfind(" b/") if not names.endswith('"') else names.rfind(' "b/')
                if split > 0:
                    current["git_a"] = _strip_prefix(names[:split])
                    current["git_b"] = _strip_prefix(names[split + 1:])
            header = ""
            continue
        if current is None:
            continue
        if not header:
            if raw.startswith("--- "):
                name = raw[4:]
                current["old"] = None if name == "/dev/null" else _strip_prefix(name)
                if name == "/dev/null":
                    current["status"] = FileStatus.ADDED
                continue
            if raw.startswith("+++ "):
                name = raw[4:]
                if name == "/dev/null":
                    current["status"] = FileStatus.DELETED
                    current["new"] = None
                else:
                    current["new"] = _strip_prefix(name)
                continue
            if raw.startswith("new file mode"):
                current["status"] = FileStatus.ADDED
                current.setdefault("new", current.get("git_b"))
                continue
            if raw.startswith("deleted file mode"):
                current["status"] = FileStatus.DELETED
                current.setdefault("old", current.get("git_a"))
                continue
            if raw.startswith("rename from "):
                current["status"] = FileStatus.RENAMED
                current["old"] = _unquote(raw[len("rename from "):])
                continue
            if raw.startswith("rename to "):
                current["new"] = _unquote(raw[len("rename to "):])
                continue
            if raw.startswith("Binary files ") or raw == "GIT binary patch":
                current["binary"] = True
                current.setdefault("new", current.get("git_b"))
                current.setdefault("old", current.get("git_a"))
                continue
        match = _HUNK.match(raw)
        if match:
            close_hunk()
            old_start = old_no = int(match.group(1))
            new_start = new_no = int(match.group(3))
            header = raw
            current.setdefault("new", current.get("git_b"))
            continue
        if not header:
            continue
        if raw.startswith("+"):
            lines.append(DiffLine(LineKind.ADDED, raw[1:], None, new_no))
            new_no += 1
        elif raw.startswith("-"):
            lines.append(DiffLine(LineKind.REMOVED, raw[1:], old_no, None))
            old_no += 1
        elif raw.startswith(" "):
            lines.append(DiffLine(LineKind.CONTEXT, raw[1:], old_no, new_no))
            old_no += 1
            new_no += 1
        elif raw.startswith("\\"):
            lines.append(DiffLine(LineKind.NOTE, raw[1:].strip(), None, None))
    close_file()
    return files


_QUOTED = {"\n": "\\n", "\t": "\\t", '"': '\\"', "\\": "\\\\", "\a": "\\a",
           "\b": "\\b", "\f": "\\f", "\r": "\\r", "\v": "\\v"}


def quote_path(name: str) -> str:
    """``name`` as git prints a path (``core.quotePath=false``): in double quotes with C
    escapes when it holds a quote, a backslash or a control character, else as it is.

    A file name is the agent's to choose: printed raw, a newline in it could start a
    line that looks like a diff header or a stat row. ``_unquote`` reads it back.
    """
    if not any(ch in '"\\' or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
        return name
    body = "".join(_QUOTED.get(ch) or (f"\\{ord(ch):03o}" if ord(ch) < 0x20 or ord(ch) == 0x7F
                                       else ch) for ch in name)
    return f'"{body}"'


def patch_text(diff: FrameDiff, path: str | None = None) -> str:
    """The change as unified diff text again (for ``$PAGER`` and ``--json`` readers); file
    names quoted as git quotes them."""
    out: list[str] = []
    for file in diff.files:
        if path is not None and file.path != path:
            continue
        old = file.old_path or file.path
        old_a, new_b = quote_path(f"a/{old}"), quote_path(f"b/{file.path}")
        out.append(f"diff --git {old_a} {new_b}")
        if file.binary:
            out.append(f"Binary file {quote_path(file.path)} ({file.status.value})")
            continue
        out.append("--- /dev/null" if file.status in (FileStatus.ADDED, FileStatus.UNTRACKED)
                   else f"--- {old_a}")
        out.append("+++ /dev/null" if file.status is FileStatus.DELETED
                   else f"+++ {new_b}")
        for hunk in file.hunks:
            out.append(hunk.header)
            for line in hunk.lines:
                mark = {LineKind.ADDED: "+", LineKind.REMOVED: "-", LineKind.CONTEXT: " ",
                        LineKind.NOTE: "\\ "}[line.kind]
                out.append(mark + line.text)
    return "\n".join(out) + ("\n" if out else "")
