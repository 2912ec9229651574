"""Provider evidence that needs time or a subprocess: stale activity and versions.

Stale activity. Claude and Codex fire no Stop on an interrupt or an API error,
so a ``working`` recorded by a hook may never be followed by ``ready``. Two
pieces keep it from lasting forever:

* ``effective_activity`` (pure) is what readers show: ``working`` with no hook
  evidence for ``stale_after_ms`` reads as ``unknown``. Builders call it, so a
  read never writes.
* ``reconcile_stale_activity`` is the named reconcile step that makes it
  durable (``working`` -> ``unknown``, reason ``unknown``), so policy code such
  as "does this push wait for a Stop?" sees the same thing the person sees.

``unknown`` is never ``ready``: an aged session is not eligible for a control
turn; only a trusted Stop makes it ready again.

Versions. ``check_provider`` runs ``<command> --version`` once per process and
executable (strict parse, timeout, fail closed: ``core.providers.version``);
the launcher stores the result on the session as telemetry with
``storage.operations.sessions.record_provider_version``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from core.model.enums import Activity, ActivityReason, Provider
from core.model.errors import ProviderError

if TYPE_CHECKING:
    from core.config.config import Config
    from core.providers.version import ProviderVersion

# Claude's Bash tool runs at most 10 minutes without a hook in between; a model
# turn rarely thinks silently for more than a few. 15 minutes of silence while
# "working" means the turn ended without its Stop.
STALE_WORKING_AFTER_MS = 15 * 60 * 1000


def effective_activity(activity: str, last_observed_at: int | None, now: int,
                       stale_after_ms: int = STALE_WORKING_AFTER_MS) -> str:
    """The activity to show: ``working`` without evidence for too long is ``unknown``.

    Every other activity is durable (ready, needs_input, completed wait for the
    person, not for time), so only ``working`` ages.
    """
    if activity != Activity.WORKING:
        return activity
    if last_observed_at is None or now - last_observed_at >= stale_after_ms:
        return Activity.UNKNOWN.value
    return activity


def effective_session(row: Mapping[str, Any] | sqlite3.Row, now: int,
                      stale_after_ms: int = STALE_WORKING_AFTER_MS) -> dict[str, Any]:
    """A copy of a session (or joined frame) row with its activity aged for display.

    The row needs ``activity`` and ``last_observed_at``; an aged row also gets
    ``activity_reason = unknown`` when it carries that column. A row without a
    session (``activity`` NULL from a LEFT JOIN) is returned unchanged.
    """
    aged = dict(row) if isinstance(row, Mapping) else dict(zip(row.keys(), row, strict=True))
    activity = aged.get("activity")
    if activity is None:
        return aged
    shown = effective_activity(activity, aged.get("last_observed_at"), now, stale_after_ms)
    if shown != activity:
        aged["activity"] = shown
        if "activity_reason" in aged:
            aged["activity_reason"] = ActivityReason.UNKNOWN.value
    return aged


def reconcile_stale_activity(conn: sqlite3.Connection, now: int, *,
                             stale_after_ms: int = STALE_WORKING_AFTER_MS) -> list[str]:
    """Reconcile step: move every ``working`` without evidence to ``unknown``.

    Runs in its own short write transaction (call it outside any other one) and
    returns the session keys it moved. Idempotent: a second run moves nothing.
    """
    from storage.connection import write_transaction
    from storage.operations import sessions as sessions_ops

    with write_transaction(conn) as tx:
        return sessions_ops.age_out_working(tx, observed_before=now - stale_after_ms, now=now)


# --------------------------------------------------------------------------- versions

_VERSIONS: dict[tuple[Any, ...], ProviderVersion] = {}


def check_provider(config: Config, provider: Provider | str) -> ProviderVersion:
    """The configured provider's version, probed once per process and executable.

    Fails closed with ``ProviderError``: disabled in the config
    (``provider_disabled``), executable missing (``provider_missing``), or a
    ``--version`` that fails, hangs or prints anything but the one expected line
    (``provider_version_*``). Failures are not cached, so installing or fixing
    the provider and retrying works without a restart; a replaced executable
    (new inode, size or mtime) is probed again.
    """
    from core.providers.version import probe_version, resolve_command

    provider = Provider(provider)
    settings = config.providers.get(provider)
    if settings is None or not settings.enabled:
        raise ProviderError(f"{provider.value} is disabled in the providers config; add "
                            f"`enabled = true` under [providers.{provider.value}] in "
                            "config.toml (`switchboard doctor` names the file), or choose "
                            "another provider", code="provider_disabled")
    argv = resolve_command(provider, settings.command)
    key = (provider, tuple(argv), settings.version_timeout_seconds, _file_identity(argv[0]))
    found = _VERSIONS.get(key)
    if found is None:
        found = probe_version(provider, argv, timeout=settings.version_timeout_seconds)
        _VERSIONS[key] = found
    return found


def clear_provider_cache() -> None:
    """Forget every probed version (tests; a long-lived process after an upgrade)."""
    _VERSIONS.clear()


def _file_identity(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
