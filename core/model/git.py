"""Every git call Switchboard makes, with the repository's code-running settings off.

A checkout is the agent's to write, ``.git/config`` and ``.gitattributes``
included, and git runs programs the repository names: an fsmonitor on any
command that looks at the working tree, a filter driver's clean (``git diff``)
or smudge (``worktree add``) for every path ``.gitattributes`` gives it, an
external diff or a textconv on ``git diff``, hooks (``post-checkout`` on
``worktree add``), a pager for a command run on a terminal. Switchboard runs
git as the person (the change worker on every Stop, ``frame diff``,
``conflicts --refresh``, the diff screen, ``worktree add``), so any of those
would run the agent's script with the person's rights. Every call here gets:

- on the command line (``-c`` beats every config file): ``core.fsmonitor=false``,
  ``core.hooksPath=/dev/null``, ``diff.external=``, ``submodule.recurse=false``,
  ``gc.auto=0``, and ``--no-pager``;
- ``--no-ext-diff --no-textconv`` on the diff family (a per-path ``diff=`` driver's
  command and textconv are not reachable through ``-c``: git has no wildcard);
- every filter driver the configuration defines, read first with ``git config``
  (itself run this way), emptied with ``required=false``: git runs no filter
  whose clean, smudge and process are empty (git 2.39 has no switch for all
  filters, and ``--attr-source`` came in 2.40). The names travel as
  ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``, so a driver named with ``=`` cannot
  break the ``-c name=value`` split. A filter the person set globally (git-lfs)
  is off as well: a diff then shows LFS pointers, never runs a repository's program.
  When the names cannot be read the call is not made (``ConfigUnreadable``);
- an environment without the ``GIT_*`` variables that move the repository or carry
  config and programs (``GIT_DIR``, ``GIT_CONFIG_PARAMETERS``, ``GIT_EXTERNAL_DIFF``,
  ...); only where the person's own config lives (``GIT_CONFIG_GLOBAL``, ...) and
  their identity are kept.

What stays open: a filter driver added to the config between the read and the call
it guards (a few milliseconds) is not emptied; ``docs/decisions.md`` says so.

``git difftool`` (the diff screen's ``o``) is the one call that runs a program on
purpose: ``difftool_call`` builds it from the person's global config only.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, overload

#: Settings that make git run a program, switched off on every call's command line.
OFF_SETTINGS: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("diff.external", ""),
    ("submodule.recurse", "false"),
    ("gc.auto", "0"),
)
#: Options every diff-family command gets: no external diff, no textconv program.
DIFF_OFF_OPTIONS: tuple[str, ...] = ("--no-ext-diff", "--no-textconv")
_DIFF_FAMILY = frozenset({"diff", "diff-index", "diff-files", "diff-tree", "log", "show",
                          "format-patch"})
#: A filter driver's programs and its "fail when it cannot run" switch.
_FILTER_OFF: tuple[tuple[str, str], ...] = (
    ("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
#: GIT_* variables that do not change which repository or which programs git uses.
_KEPT_GIT_ENV = frozenset({
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE"})
CONFIG_READ_TIMEOUT_S = 5.0
#: The program ``git difftool`` itself sets as the external diff.
DIFFTOOL_HELPER = "git-difftool--helper"


def git_argv(cwd: str | os.PathLike[str], *args: str,
             config: Iterable[tuple[str, str]] = (),
             work_tree: str | os.PathLike[str] | None = None) -> list[str]:
    """``git --no-pager -C CWD -c ... ARGS``, with ``DIFF_OFF_OPTIONS`` after a diff verb;
    ``config`` adds the caller's own harmless ``-c`` settings (``core.quotePath``).
    ``work_tree`` pins the working tree: a repository's ``core.worktree`` (which ``-c``
    cannot override) would otherwise let ``git diff`` read files outside the checkout."""
    argv = ["git", "--no-pager", "-C", os.fspath(cwd)]
    if work_tree is not None:
        argv.append(f"--work-tree={os.fspath(work_tree)}")
    for key, value in (*config, *OFF_SETTINGS):
        argv += ["-c", f"{key}={value}"]
    if args and args[0] in _DIFF_FAMILY:
        return [*argv, args[0], *DIFF_OFF_OPTIONS, *args[1:]]
    return [*argv, *args]


def base_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (this process's by default) without the GIT_* variables git must not
    take from whoever started Switchboard."""
    source = os.environ if environ is None else environ
    return {name: value for name, value in source.items()
            if not name.startswith("GIT_") or name in _KEPT_GIT_ENV}


def with_config(env: Mapping[str, str], settings: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``env`` plus ``settings`` as ``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n`` (above every
    config file, below ``-c``): key and value are separate, whatever a name holds."""
    out = {name: value for name, value in env.items() if not name.startswith("GIT_CONFIG_")
           or name in _KEPT_GIT_ENV}
    pairs = list(settings)
    for index, (key, value) in enumerate(pairs):
        out[f"GIT_CONFIG_KEY_{index}"] = key
        out[f"GIT_CONFIG_VALUE_{index}"] = value
    out["GIT_CONFIG_COUNT"] = str(len(pairs))
    return out


class ConfigUnreadable(OSError):
    """The checkout's git config could not be read, so its drivers cannot be switched
    off: the call it guards is not made (an ``OSError``, as a git that fails to start)."""


def configured_drivers(cwd: str | os.PathLike[str], section: str,
                       env: Mapping[str, str] | None = None) -> list[str]:
    """Names of ``SECTION.<name>.*`` in the config git would use in ``cwd`` (every scope,
    includes followed), read with the same settings off. Raises ``ConfigUnreadable``
    when git cannot answer (a timeout, a broken config): failing open would run the
    call with every filter live."""
    argv = git_argv(cwd, "config", "--null", "--includes", "--get-regexp",
                    f"^{section}\\.")
    try:
        done = subprocess.run(argv, capture_output=True, timeout=CONFIG_READ_TIMEOUT_S,
                              check=False, stdin=subprocess.DEVNULL,
                              env=dict(env) if env is not None else base_env())
    except subprocess.TimeoutExpired as exc:
        raise ConfigUnreadable(f"git config in {os.fspath(cwd)} took over "
                               f"{CONFIG_READ_TIMEOUT_S:g} s") from exc
    if done.returncode not in (0, 1):  # 1: no such key, the usual answer
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ConfigUnreadable(f"git config in {os.fspath(cwd)} failed: "
                               + (said[-1] if said else f"exit {done.returncode}"))
    names: list[str] = []
    for entry in done.stdout.split(b"\0"):
        key = entry.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        first, last = key.find("."), key.rfind(".")
        if 0 < first < last:
            name = key[first + 1:last]
            if name not in names:
                names.append(name)
    return names


def filters_off(names: Iterable[str]) -> list[tuple[str, str]]:
    """The settings that leave each named filter driver with nothing to run."""
    return [(f"filter.{name}.{variable}", value)
            for name in names for variable, value in _FILTER_OFF]


def git_env(cwd: str | os.PathLike[str],
            environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a git call in ``cwd``: ``base_env`` with every filter driver
    the configuration defines emptied."""
    env = base_env(environ)
    return with_config(env, filters_off(configured_drivers(cwd, "filter", env)))


@overload
def run_git(cwd: str | os.PathLike[str], *args: str, timeout: float,
            text: Literal[False] = ..., config: Iterable[tuple[str, str]] = (),
            work_tree: str | os.PathLike[str] | None = None,
            ) -> subprocess.CompletedProcess[bytes]: ...


@overload
def run_git(cwd: str | os.PathLike[str], *args: str, timeout: float,
            text: Literal[True], config: Iterable[tuple[str, str]] = (),
            work_tree: str | os.PathLike[str] | None = None,
            ) -> subprocess.CompletedProcess[str]: ...


def run_git(cwd: str | os.PathLike[str], *args: str, timeout: float,
            text: bool = False, config: Iterable[tuple[str, str]] = (),
            work_tree: str | os.PathLike[str] | None = None,
            ) -> subprocess.CompletedProcess[bytes] | subprocess.CompletedProcess[str]:
    """One git call in ``cwd`` with output captured and stdin closed; ``OSError`` and
    ``subprocess.TimeoutExpired`` pass through for the caller to word."""
    return subprocess.run(git_argv(cwd, *args, config=config, work_tree=work_tree),
                          capture_output=True,
                          timeout=timeout,
                          check=False, stdin=subprocess.DEVNULL, text=text,
                          env=git_env(cwd))


# --------------------------------------------------------------------------- difftool


@dataclass(frozen=True)
class GitCall:
    """A command line and the environment to run it with."""

    argv: tuple[str, ...]
    env: dict[str, str]


def _global_config() -> dict[str, str]:
    """The person's global git config (``~/.gitconfig``, the XDG file, their includes),
    last value of each key; {} when there is none."""
    argv = git_argv("/", "config", "--global", "--includes", "--null", "--list")
    try:
        done = subprocess.run(argv, capture_output=True, timeout=CONFIG_READ_TIMEOUT_S,
                              check=False, stdin=subprocess.DEVNULL, env=base_env())
    except (OSError, subprocess.TimeoutExpired):
        return {}
    values: dict[str, str] = {}
    for entry in done.stdout.split(b"\0"):
        key, _, value = entry.decode("utf-8", "surrogateescape").partition("\n")
        if key:
            values[_normal_key(key)] = value
    return values


def _normal_key(key: str) -> str:
    """Section and variable are case-insensitive in git, the subsection is not."""
    first, last = key.find("."), key.rfind(".")
    if 0 < first < last:
        return f"{key[:first].lower()}.{key[first + 1:last]}.{key[last + 1:].lower()}"
    return key.lower()


def person_difftool() -> str | None:
    """The ``diff.tool`` of the person's global config; a repository's own never counts."""
    tool = _global_config().get("diff.tool", "").strip()
    return tool or None


def difftool_call(checkout: str, base: str, tool: str) -> GitCall:
    """``git difftool`` of ``base`` in ``checkout`` with the person's ``tool`` as their
    global config defines it.

    The repository's config could redefine the tool (``difftool.<tool>.cmd`` or
    ``.path``, which git-difftool--helper prefers to the built-in), or give a path a
    ``diff=`` driver whose command replaces the tool: each of those is set again
    here from the global config (or emptied, so a built-in tool is itself), and each
    driver's command is the helper difftool runs anyway.
    """
    person = _global_config()
    settings: list[tuple[str, str]] = []
    for variable in ("cmd", "path"):
        value = person.get(f"difftool.{tool}.{variable}",
                           person.get(f"mergetool.{tool}.{variable}", ""))
        settings += [(f"difftool.{tool}.{variable}", value),
                     (f"mergetool.{tool}.{variable}", value)]
    env = base_env()
    settings += [(f"diff.{name}.command", DIFFTOOL_HELPER)
                 for name in configured_drivers(checkout, "diff", env)]
    settings += filters_off(configured_drivers(checkout, "filter", env))
    argv = git_argv(checkout, "difftool", "--no-prompt", f"--tool={tool}", "--no-textconv",
                    base, "--")
    return GitCall(tuple(argv), with_config(env, settings))
