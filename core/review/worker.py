"""``python -m core.review.worker FRAME_ID``: one frame's changed files, after a turn.

Started detached by the hook (``core.evidence.change_watch``) with the hook's home and
no capability. It runs git plumbing in the frame's checkout, stores the changed
files (``storage.review_store``), resolves review comments whose lines the
turn touched, and writes its own failure, if any, to ``review-worker.log`` in
the home.
"""

from __future__ import annotations

import os
import sys
import traceback


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m core.review.worker FRAME_ID", file=sys.stderr)
        return 2
    from core.config.home import Home

    home = Home.from_env()
    try:
        from core.review.changes import refresh_frame

        refresh_frame(home, argv[0])
    except Exception:
        if home.root.is_dir():
            fd = os.open(home.root / "review-worker.log",
                         os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as log:
                log.write(traceback.format_exc())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
