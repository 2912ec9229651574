"""Run every benchmark module in turn and print its figures (`make bench`)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> int:
    folder = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(folder)])
                   if m.name.startswith("bench_"))
    failed = 0
    for name in names:
        print(f"== {name}", flush=True)
        module = importlib.import_module(f"tests.bench.{name}")
        try:
            result = module.main()
        except Exception as exc:  # report and go on: one broken bench must not hide others
            print(f"   failed: {exc!r}")
            failed += 1
            continue
        if isinstance(result, int) and result:
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
