"""Commands printed for a person to paste: one quoting rule for every ``next:`` hint.

A hint is only useful if pasting it runs what it says. Names come from the person
(a folder called ``my app``, a project ``a;b``, a branch ``-x``), so every
argument is shell-quoted, and an argument that starts with ``-`` follows ``--``
so the command reads it as a name, never as an option.
"""

from __future__ import annotations

import shlex


def command(*argv: str, names: tuple[str, ...] = ()) -> str:
    """```switchboard ARGV... NAMES...``` quoted for a POSIX shell, in backquotes.

    ``names`` are free-form values (project names, paths) placed after ``--``
    when any of them starts with ``-``.
    """
    words = ["switchboard", *argv]
    if any(name.startswith("-") for name in names):
        words.append("--")
    words.extend(names)
    return f"`{shlex.join(words)}`"
