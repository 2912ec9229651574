"""`switchboard worktree add|remove|list`: parallel work is parallel checkouts.

The contract allows one work context per checkout, so two agents that should
change the same repository at once need two checkouts. A git worktree is the
cheap kind: it shares the repository's objects, has its own branch, and here it
becomes its own project (checkout + workspace + view) named
``<project>-<name>``, tied to the same repository row.

Removal is refused while the worktree has uncommitted changes or live agents:
both would lose a person's or an agent's work silently.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from core.config.config import Config, ProjectConfig, load_config
from core.config.home import Home
from core.install.project_add import AddedProject, add_project, find_checkout, remove_project
from core.model.errors import ConfigError, Conflict, NotFound
from core.model.git import run_git

GIT_TIMEOUT_S = 60.0
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Worktree:
    project: str
    base_project: str
    path: str
    branch: str


def worktree_project_name(base: str, name: str) -> str:
    return f"{base}-{name}"


def default_path(base_root: Path, name: str) -> Path:
    """Beside the main checkout (``widget`` -> ``widget-fix``), where a person looks."""
    return base_root.parent / f"{base_root.name}-{name}"


def add_worktree(home: Home, base: str, name: str, *, path: Path | None = None,
                 branch: str | None = None) -> tuple[Worktree, AddedProject]:
    """``git worktree add`` for ``base``'s repository, then a project for it."""
    if not _NAME_RE.fullmatch(name):
        raise ConfigError(f"worktree name {name!r}: use 1-64 letters, digits, '.', '_' or "
                          "'-', starting with a letter or digit", code="worktree_name_invalid")
    config = load_config(home.config_path)
    project = _project(config, base)
    checkout = find_checkout(Path(project.root))
    if not checkout.is_git:
        raise Conflict(f"project {project.name!r} ({project.root}) is not a git checkout; "
                       "worktrees need git", code="worktree_not_git")
    repository_id = config.checkout(project.checkout_id).repository_id
    target = (path or default_path(checkout.root, name)).expanduser().absolute()
    if target.resolve() == checkout.root or checkout.root in target.resolve().parents:
        raise Conflict(f"{target} is inside the project's checkout {checkout.root}; a "
                       "worktree goes beside it (the default), not in it: pass --path "
                       "outside it", code="worktree_path_invalid")
    if target.exists():
        raise Conflict(f"{target} already exists; pass another name or --path",
                       code="worktree_exists")
    new_name = worktree_project_name(project.name, name)
    if any(p.name == new_name for p in config.projects):
        raise Conflict(f"a project is already named {new_name!r}; pick another worktree name",
                       code="worktree_exists")
    branch = _checked_branch(checkout.root, branch or name)
    has_branch = _git(checkout.root, "rev-parse", "--verify", "--quiet",
                      f"refs/heads/{branch}").returncode == 0
    # `--` ends git's options: the path and the branch are never read as one.
    args = ["worktree", "add", "--", str(target), branch] if has_branch else \
        ["worktree", "add", "-b", branch, "--", str(target)]
    done = _git(checkout.root, *args)
    if done.returncode != 0:
        raise Conflict(f"git worktree add failed: {_last_line(done)}", code="worktree_git")
    try:
        added = add_project(home, target, name=new_name,
                            provider=project.preferred_provider,
                            repository_id=repository_id, added_by=f"worktree add {name}")
    except BaseException:
        _git(checkout.root, "worktree", "remove", "--force", str(target))
        raise
    return Worktree(new_name, project.name, added.root, branch), added


def remove_worktree(home: Home, project_name: str, *, live_agents: int) -> Worktree:
    """Remove a worktree project: refused with uncommitted changes or live agents.

    ``live_agents`` is counted by the caller from the registry (the engine's
    business); the checks on the files are git's.
    """
    config = load_config(home.config_path)
    project = _project(config, project_name)
    root = Path(project.root)
    top = _git(root, "rev-parse", "--path-format=absolute", "--git-common-dir")
    own = _git(root, "rev-parse", "--path-format=absolute", "--git-dir")
    if top.returncode != 0 or top.stdout.strip() == own.stdout.strip():
        raise Conflict(f"project {project.name!r} is not a git worktree; `worktree remove` "
                       "only removes worktrees it can recreate", code="worktree_not_worktree")
    if live_agents:
        raise Conflict(f"project {project.name!r} has {live_agents} live agent(s); stop them "
                       "first (`s` in the navigator)", code="worktree_busy")
    status = _git(root, "status", "--porcelain")
    if status.returncode != 0:
        raise Conflict(f"git status failed in {root}: {_last_line(status)}",
                       code="worktree_git")
    if status.stdout.strip():
        changed = len(status.stdout.strip().splitlines())
        raise Conflict(f"{root} has {changed} uncommitted change(s); commit or stash them, "
                       "then remove it", code="worktree_dirty")
    branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    main_root = Path(top.stdout.strip()).parent
    done = _git(main_root, "worktree", "remove", str(root))
    if done.returncode != 0:
        raise Conflict(f"git worktree remove failed: {_last_line(done)}", code="worktree_git")
    remove_project(home, project.name)
    return Worktree(project.name, "", str(root), branch)


def _checked_branch(root: Path, branch: str) -> str:
    """A branch name git accepts, and never an option: ``--orphan`` or ``-D`` given as
    ``--branch`` reached git as options."""
    if not branch or branch.startswith("-") or \
            _git(root, "check-ref-format", "--branch", branch).returncode != 0:
        raise ConfigError(f"branch {branch!r} is not a valid git branch name (git "
                          "check-ref-format --branch refuses it, or it starts with '-')",
                          code="worktree_branch_invalid")
    return branch


def _project(config: Config, name_or_id: str) -> ProjectConfig:
    for project in config.projects:
        if name_or_id in (project.name, project.project_id):
            return project
    names = ", ".join(p.name for p in config.projects) or "none configured"
    raise NotFound(f"unknown project {name_or_id!r} (known: {names})", code="project_unknown")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git with the checkout's hooks, filters and fsmonitor off (``core.model.git``):
    ``worktree add`` would otherwise run its post-checkout hook and smudge filters."""
    try:
        return run_git(cwd, *args, timeout=GIT_TIMEOUT_S, text=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(["git", *args], 1, "", str(exc))


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"
