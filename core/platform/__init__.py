"""Every operating-system-specific call Switchboard makes, with a Linux and a macOS branch.

Switchboard runs where its users are: Linux and macOS. The rest of the code asks
this package for what differs between the two (whose process is on the other end of
a loopback connection, a child that ends with its parent, a watch on files) and never
names ``/proc``, ``SO_PEERCRED``, ``prctl``, inotify or ``SOCK_CLOEXEC`` itself;
``tests/core/test_platform.py`` holds that boundary and runs each macOS branch by
handing the function ``system="darwin"``.

Each function takes ``system`` (``sys.platform`` by default) so a test on Linux can
exercise the other branch wherever Python lets the call itself be stood in for.
"""

from __future__ import annotations

import sys

LINUX = "linux"
MACOS = "darwin"


def system_name(system: str | None = None) -> str:
    """``linux``, ``darwin`` or what ``sys.platform`` says otherwise."""
    name = system or sys.platform
    return LINUX if name.startswith("linux") else name
