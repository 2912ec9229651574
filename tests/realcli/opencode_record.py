"""Record the events OpenCode gives a per-launch plugin, into ``tests/fixtures/hooks``.

``python -m tests.realcli.opencode_record`` runs the journey of
:mod:`tests.realcli.opencode_journey` on the newest OpenCode of the window against the
loopback stand-in and writes each launch's lines to
``tests/fixtures/hooks/opencode-<version>-<launch>.jsonl`` (``first``: new session,
prompt, permission asked and allowed once, tool run; ``resumed``: ``--session <id>``
and one prompt). One JSON object a line, ``{"kind", "name", "payload"}``, exactly as
the recorder plugin wrote it, with the run's temporary folder rewritten to
``/home/dev/src/demo``'s parent (``/home/dev``) so the files do not name this machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.realcli.install import OPENCODE_TESTED, ensure_opencode
from tests.realcli.opencode_journey import run_journey
from tests.realcli.opencode_standin import OpencodeStandin

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"


def _rewrite(lines: list[dict], root: Path) -> str:
    text = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
    return text.replace(str(root), "/home/dev").replace(str(root).lstrip("/"), "home/dev")


def main() -> int:
    version = OPENCODE_TESTED[0]
    binary = ensure_opencode(version)
    with tempfile.TemporaryDirectory(prefix="ocrec-") as folder:
        root = Path(folder)
        try:
            with OpencodeStandin() as api:
                first, second, _ = run_journey(binary, api, root, root / "a.sock",
                                               root / "b.sock")
        finally:
            for sock in ("a.sock", "b.sock"):
                subprocess.run(["tmux", "-S", str(root / sock), "kill-server"],
                               capture_output=True)
        for launch, lines in (("first", first), ("resumed", second)):
            out = FIXTURES / f"opencode-{version}-{launch}.jsonl"
            out.write_text(_rewrite(lines, root), encoding="utf-8")
            print(f"{out}: {len(lines)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
