"""Command lines that the system's own tools accept on Linux (GNU) and macOS (BSD).

GNU ``sleep`` takes ``infinity``; BSD ``sleep`` refuses it and exits at once, which
on macOS ended every empty main pane as soon as it was drawn. The largest count
both take is a 32-bit one: 68 years.
"""

from __future__ import annotations

SLEEP_FOREVER_S = 2**31 - 1


def sleep_forever_argv(sleep: str = "sleep") -> list[str]:
    """A ``sleep`` that lasts as long as the pane, on GNU and BSD alike."""
    return [sleep, str(SLEEP_FOREVER_S)]
