"""The per-launch hook command: ``python -S <this file> hook --provider P EVENT``.

Every prompt and every turn end of every managed agent starts one Python
process, so its start-up is the hook's largest fixed cost. ``-S`` skips the
``site`` module: no ``.pth`` files, no editable-install finder, no
site-packages scan, about two thirds of a bare ``python -c pass`` in a
development checkout. The hook path itself needs only the standard library
and this project, whose root this script puts first on ``sys.path`` (the
script's own folder, which Python would put there, is replaced: it holds
modules named like standard ones).

Should a branch of the hook ever import a third-party library (the tmux
adapter used libtmux until it spawned tmux itself), a finder of last resort
loads ``site`` on the first import nothing else can find (standard-library names
aside: their optional modules are absent on purpose), then retries it: the
process then sees exactly what a normal start would have seen.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SiteOnDemand:
    """Meta-path finder, last in line: the first unknown top-level import loads ``site``."""

    @classmethod
    def find_spec(cls, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if path is not None or cls not in sys.meta_path or name in sys.stdlib_module_names:
            return None  # a submodule (its package's path decides) or an absent optional one
        sys.meta_path.remove(cls)
        import site

        site.main()  # what a start without -S does: site-packages, .pth, user site
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, None, target) if find is not None else None
            if spec is not None:
                return spec
        return None


def main() -> int:
    sys.path[0] = ROOT
    sys.meta_path.append(SiteOnDemand)
    from core.model import fast_exit
    from navigator.cli import main as cli_main

    fast_exit.enabled = True  # this process ends in finish(): see core.model.fast_exit

    return cli_main(sys.argv[1:])


def finish(code: int) -> None:
    """Exit without the interpreter's teardown: every file and database the hook
    used is closed by then, and freeing a megabyte payload's objects and every
    module one by one cost a tool hook several milliseconds for nothing."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        exit_code = main()
    except SystemExit as exc:  # argparse's refusals: its words are printed already
        if exc.code is None or isinstance(exc.code, int):
            finish(exc.code or 0)
        raise
    finish(exit_code)
