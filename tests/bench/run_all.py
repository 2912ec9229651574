"""Run every benchmark module in turn and print its figures (`make bench`).

Each ``tests/bench/bench_*.py`` module's ``main()`` runs with its default
arguments (``sys.argv`` is reset per module so one module's options never
reach another). A module that cannot be imported because something it needs
is missing (``ModuleNotFoundError``: a bench written ahead of its feature, or a
file removed) is reported as skipped and the run goes on; a bench that raises
or returns a non-zero status is reported and makes the whole run fail.

``python -m tests.bench.run_all [bench_registry ...]`` runs only the named ones.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def discover() -> list[str]:
    folder = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(folder)])
                  if m.name.startswith("bench_"))


def run_one(name: str) -> str:
    """'ok', 'failed' or 'skipped'."""
    try:
        module = importlib.import_module(f"tests.bench.{name}")
    except ModuleNotFoundError as exc:
        print(f"   skipped: {exc.name or exc} is missing")
        return "skipped"
    except Exception as exc:  # a broken bench must not hide the others
        print(f"   failed to import: {exc!r}")
        return "failed"
    entry = getattr(module, "main", None)
    if entry is None:
        print("   skipped: no main()")
        return "skipped"
    saved_argv = sys.argv
    sys.argv = [f"tests.bench.{name}"]
    started = time.perf_counter()
    try:
        result = entry()
    except SystemExit as exc:  # argparse or an explicit exit inside main()
        result = exc.code
    except Exception as exc:
        print(f"   failed: {exc!r}")
        return "failed"
    finally:
        sys.argv = saved_argv
    print(f"   ({time.perf_counter() - started:.1f} s)", flush=True)
    if isinstance(result, int) and result:
        print(f"   exit status {result}")
        return "failed"
    return "ok"


def main(argv: list[str] | None = None) -> int:
    wanted = list(sys.argv[1:] if argv is None else argv)
    names = discover()
    for name in wanted:
        if name not in names:
            names.append(name)  # asked for by name: reported as skipped if absent
    if wanted:
        names = [n for n in names if n in wanted]
    outcomes: dict[str, str] = {}
    for name in names:
        print(f"== {name}", flush=True)
        outcomes[name] = run_one(name)
    print("== summary: " + ", ".join(f"{n} {o}" for n, o in outcomes.items()))
    return 1 if "failed" in outcomes.values() else 0


if __name__ == "__main__":
    sys.exit(main())
