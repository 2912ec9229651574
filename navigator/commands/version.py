"""`switchboard --version`: this package's version and the provider CLIs found.

Reached before argparse builds the command groups (``navigator.cli``), so it
loads only ``core.install.about``: no Textual, no engine, no tmux.
"""

from __future__ import annotations

import sys


def print_version(_args: object = None) -> int:
    """Always 0: a provider that is missing or unreadable is reported, not an error."""
    from core.config.home import Home
    from core.install.about import package_version, probe_providers, probe_specs
    from navigator.commands.output import say

    reports = probe_providers(probe_specs(Home.from_env()))
    width = max(len(r.provider.value) for r in reports) if reports else 0
    lines = [f"switchboard {package_version()} (Python {sys.version.split()[0]})"]
    for report in reports:
        where = f"  {report.executable}" if report.executable else ""
        lines.append(f"{report.provider.value:<{width}}  {report.detail}{where}")
    say("\n".join(lines))
    return 0
