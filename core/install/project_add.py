"""`switchboard project add`: a folder becomes a project in one command.

The person should never invent UUIDs or learn the three config tables
(repositories, checkouts, projects) before the first view opens. The rows are
generated here and *appended* to the config text as one commented block, so
the person's own comments and ordering survive; the whole new text is parsed
with the same validator ``load_config`` uses before it replaces the file, so a
bad addition changes nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from core.config.config import (
    MAX_NAME_CHARS,
    Config,
    load_config,
    parse_config,
    toml_string,
)
from core.config.home import Home
from core.model.enums import Provider
from core.model.errors import ConfigError, Conflict
from core.model.git import run_git
from core.model.text import TextShape, unsafe_reason

GIT_TIMEOUT_S = 10.0
_URL_CREDENTIALS_RE = re.compile(r"://[^/@]*:[^/@]*@")


@dataclass(frozen=True)
class Checkout:
    """What a folder is: its git root (or the folder itself) and where it came from."""

    root: Path
    is_git: bool
    origin_url: str | None


@dataclass(frozen=True)
class AddedProject:
    project_id: str
    name: str
    root: str
    checkout_id: str
    repository_id: str | None
    config_path: str


def find_checkout(path: Path) -> Checkout:
    """The git top level holding ``path`` (a worktree's own root), else ``path`` itself."""
    path = path.expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"{path}: not a folder; name the project's folder "
                          "(`switchboard project add PATH`)", code="project_path_invalid")
    top = _git(path, "rev-parse", "--show-toplevel")
    if top is None:
        return Checkout(root=path, is_git=False, origin_url=None)
    url = _git(path, "config", "--get", "remote.origin.url")
    if url is not None and (_URL_CREDENTIALS_RE.search(url) or any(c.isspace() for c in url)):
        url = None  # never copy a password into the config; the name is enough
    return Checkout(root=Path(top).resolve(), is_git=True, origin_url=url)


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = run_git(cwd, *args, timeout=GIT_TIMEOUT_S, text=True)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def add_project(home: Home, path: Path, *, name: str | None = None,
                provider: Provider | None = None, now: datetime | None = None,
                repository_id: str | None = None, added_by: str = "project add",
                ) -> AddedProject:
    """Append repository, checkout and project rows for ``path`` to the config.

    Refuses (changing nothing) when the folder or the name is already a project,
    or when the config does not exist yet (``switchboard init`` first).
    ``repository_id`` reuses a configured repository (a worktree of it) instead of
    writing a new one. The block is fenced by marker comments naming the project,
    so ``remove_project`` can take exactly it out again.
    """
    config = load_config(home.config_path)
    checkout = find_checkout(path)
    root = str(checkout.root)
    for existing in config.projects:
        if Path(existing.root).expanduser().resolve() == checkout.root:
            from core.model.hints import command

            raise Conflict(f"{root} is already the project {existing.name!r}; open it with "
                           f"{command('open', names=(existing.name,))}",
                           code="project_exists")
    for known in config.checkouts:
        if Path(known.path).expanduser().resolve() == checkout.root:
            raise Conflict(f"{root} is already listed as checkout {known.checkout_id} in "
                           f"{home.config_path}; add a [[projects]] entry for it there",
                           code="project_exists")
    given = name or checkout.root.name or "project"
    name = given.strip()
    if len(name) > MAX_NAME_CHARS:
        raise ConfigError(f"project name is {len(name)} characters; the limit is "
                          f"{MAX_NAME_CHARS}: pass a shorter --name", code="project_name_invalid")
    unsafe = unsafe_reason("project name", given, TextShape.LINE)
    if unsafe is not None:  # the shared rule, before strip() could hide a newline
        raise ConfigError(f"{unsafe}: pass a plain --name (nothing was changed)",
                          code="project_name_invalid")
    if not name:
        raise ConfigError("project name is blank: pass a plain --name",
                          code="project_name_invalid")
    if any(p.name == name for p in config.projects):
        raise Conflict(f"a project is already named {name!r}; pass another with --name",
                       code="project_exists")
    added = AddedProject(
        project_id=str(uuid.uuid4()), name=name, root=root, checkout_id=str(uuid.uuid4()),
        repository_id=repository_id or (str(uuid.uuid4()) if checkout.is_git else None),
        config_path=str(home.config_path))
    text = home.config_path.read_text(encoding="utf-8")
    block = _block(added, checkout, provider, now or datetime.now(UTC),
                   new_repository=repository_id is None, added_by=added_by)
    new_text = text.rstrip("\n") + "\n\n" + block
    _check(new_text, str(home.config_path))
    _replace_private(home.config_path, new_text)
    return added


def _begin(name: str) -> str:
    return f"# >>> switchboard project {name}"


def _end(name: str) -> str:
    return f"# <<< switchboard project {name}"


def _block(added: AddedProject, checkout: Checkout, provider: Provider | None,
           now: datetime, *, new_repository: bool, added_by: str) -> str:
    lines = [f"{_begin(added.name)} (added by `switchboard {added_by}` on {now:%Y-%m-%d})"]
    if added.repository_id is not None and new_repository:
        lines += ["[[repositories]]", f"repository_id = {toml_string(added.repository_id)}",
                  f"name = {toml_string(added.name)}"]
        if checkout.origin_url:
            lines.append(f"url = {toml_string(checkout.origin_url)}")
        lines.append("")
    lines += ["[[checkouts]]", f"checkout_id = {toml_string(added.checkout_id)}"]
    if added.repository_id is not None:
        lines.append(f"repository_id = {toml_string(added.repository_id)}")
    lines += [f"path = {toml_string(added.root)}", "",
              "[[projects]]", f"project_id = {toml_string(added.project_id)}",
              f"name = {toml_string(added.name)}", f"root = {toml_string(added.root)}",
              f"checkout_id = {toml_string(added.checkout_id)}"]
    if provider is not None:
        lines.append(f"preferred_provider = {toml_string(provider.value)}")
    lines.append(_end(added.name))
    return "\n".join(lines) + "\n"


def remove_project(home: Home, name: str) -> None:
    """Take the block ``add_project`` wrote for ``name`` out of the config again.

    Only an intact, fenced block is removed (and the result validated); a block the
    person edited by hand is refused with what to delete instead.
    """
    text = home.config_path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    begin = [i for i, line in enumerate(lines) if line.startswith(_begin(name) + " (")]
    end = [i for i, line in enumerate(lines) if line.rstrip("\n") == _end(name)]
    if len(begin) != 1 or len(end) != 1 or end[0] < begin[0]:
        raise ConfigError(f"{home.config_path}: the block for project {name!r} is not the "
                          "one `switchboard` wrote; remove its [[projects]] and [[checkouts]] "
                          "entries by hand", code="project_block_edited")
    kept = lines[:begin[0]] + lines[end[0] + 1:]
    new_text = "".join(kept).rstrip("\n") + "\n"
    _check(new_text, str(home.config_path))
    _replace_private(home.config_path, new_text)


def _check(text: str, source: str) -> Config:
    """The new text must load exactly as the engine will load it."""
    return parse_config(text, source=source)


def _replace_private(path: Path, text: str) -> None:
    """Temp file beside the config, fsync, atomic rename: a crash leaves old or new."""
    fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
