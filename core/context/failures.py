"""A front end's catch-all: the machine failure (disk full, read-only...) behind an
exception, in one sentence.

It combines ``core.model.files`` (an ``OSError``) and ``storage.environment`` (a SQLite
error), so it lives above both: ``core.model.files`` is leaf vocabulary that storage
imports, and must not import storage back.
"""

from __future__ import annotations

from core.model.errors import EnvironmentFailure
from core.model.files import STOPPED, os_failure


def environment_failure_of(exc: BaseException) -> EnvironmentFailure | None:
    """For a front end's catch-all: the machine's failure behind ``exc``, or None.

    Covers a plain ``OSError`` and a SQLite error that escaped the storage
    layer's own wording; the command may have stopped part way, so the
    sentence says so instead of promising nothing changed.
    """
    failure = os_failure(exc, tail=STOPPED)
    if failure is None and type(exc).__module__ == "sqlite3":
        from storage.environment import environment_failure  # SQLite's words: rare

        failure = environment_failure(exc, tail=STOPPED)
    return failure
