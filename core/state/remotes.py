"""Cached HostState of remote hosts: fetched over SSH, validated, shown, never trusted.

A refresh runs `switchboard state host --json` on the remote (through `ssh`,
or `$SWITCHBOARD_SSH` for a wrapper), validates the envelope with every
ceiling and reference rule, checks it names the configured host, and stores it
in ``host_state_cache``. A failed refresh keeps the last good state and marks
the host offline. Cached rows are projection evidence only: no engine
operation reads them.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.config.config import RemoteConfig
from core.model.errors import EnvelopeError, NotFound, SwitchboardError
from core.state.envelope import decode_checked, encode_canonical
from core.state.state_types import HostState
from storage.connection import write_transaction
from storage.operations import remotes as remotes_ops

if TYPE_CHECKING:
    from core.context.context import Context
    from core.context.reader import RegistryReader

FETCH_TIMEOUT_S = 15.0
MAX_STATE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class RefreshResult:
    remote_name: str
    host_id: str
    reachability: str
    error: str | None


def fetch_argv(remote: RemoteConfig) -> list[str]:
    ssh = os.environ.get("SWITCHBOARD_SSH", "ssh")
    return [ssh, "-o", "BatchMode=yes", remote.ssh_target, "switchboard", "state", "host",
            "--json"]


def refresh(ctx: Context, name: str) -> RefreshResult:
    remote = next((r for r in ctx.config.remotes if r.name == name), None)
    if remote is None:
        known = ", ".join(r.name for r in ctx.config.remotes) or "none configured"
        raise NotFound(f"unknown remote {name!r} (known: {known}); add it under [[remotes]]")
    now = ctx.now()
    try:
        state_json = _fetch(remote)
        state = decode_checked(state_json, schema=HostState)
        if state.host.host_id != remote.host_id:
            raise SwitchboardError(
                f"remote {name} answered as host {state.host.host_id}, not the configured "
                f"{remote.host_id}", code="remote_identity_mismatch")
        canonical = encode_canonical(state)
    except (SwitchboardError, EnvelopeError) as exc:
        _record_failure(ctx, remote, now, f"{exc.code}: {exc.message}")
        return RefreshResult(name, remote.host_id, "offline", exc.message)
    with write_transaction(ctx.conn) as conn:
        remotes_ops.store_state(conn, remote_name=name, host_id=remote.host_id,
                                canonical=canonical, observed_at=state.generated_at, now=now)
    return RefreshResult(name, remote.host_id, "online", None)


def _fetch(remote: RemoteConfig) -> bytes:
    try:
        done = subprocess.run(fetch_argv(remote), capture_output=True, timeout=FETCH_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError as exc:
        raise SwitchboardError(f"cannot run ssh: {exc}", code="remote_unreachable") from exc
    except subprocess.TimeoutExpired as exc:
        raise SwitchboardError(f"no answer within {FETCH_TIMEOUT_S:.0f} s",
                               code="remote_timeout") from exc
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise SwitchboardError(f"remote command failed ({done.returncode}): {tail[0][:200]}",
                               code="remote_unreachable")
    if len(done.stdout) > MAX_STATE_BYTES:
        raise SwitchboardError("remote state is larger than 8 MiB", code="remote_too_large")
    return done.stdout.strip()


def _record_failure(ctx: Context, remote: RemoteConfig, now: int, error: str) -> None:
    with write_transaction(ctx.conn) as conn:
        # Never reached (no row): remember nothing rather than invent a state.
        remotes_ops.mark_offline(conn, remote.name, error, now)


@dataclass(frozen=True)
class CachedHost:
    remote_name: str
    state: HostState
    observed_at: int
    reachability: str
    error: str | None


CACHED_HOSTS_SQL = "SELECT * FROM host_state_cache ORDER BY host_id"


def cached_hosts(ctx: RegistryReader) -> list[CachedHost]:
    """Every cached remote state that still validates; a corrupt row is skipped."""
    return hosts_from_rows(ctx.conn.execute(CACHED_HOSTS_SQL))


def hosts_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[CachedHost]:
    """``cached_hosts`` from rows of ``CACHED_HOSTS_SQL`` read elsewhere (a navigator's
    awaited reads)."""
    hosts: list[CachedHost] = []
    for row in rows:
        try:
            state = decode_checked(row["state_json"].encode("utf-8"), schema=HostState)
        except EnvelopeError:
            continue
        hosts.append(CachedHost(row["remote_name"], state, row["observed_at"],
                                row["reachability"], row["bounded_error"]))
    return hosts


def configured_hosts(hosts: Iterable[CachedHost], remotes: Sequence[RemoteConfig],
                     local_host_id: str) -> list[CachedHost]:
    """The cached hosts a navigator shows: only a row of a remote still configured under
    the same name and host id, never one speaking for this host, and one row per host.

    A row left by a removed (or renamed) remote is no longer anyone's evidence; until
    ``prune_unconfigured`` deletes it, it is simply not shown, so it can never clash
    with the host a renamed entry now fetches."""
    wanted = {remote.name: remote.host_id for remote in remotes}
    seen: set[str] = set()
    shown: list[CachedHost] = []
    for cached in hosts:
        host_id = cached.state.host.host_id
        if host_id == local_host_id or wanted.get(cached.remote_name) != host_id \
                or host_id in seen:
            continue
        seen.add(host_id)
        shown.append(cached)
    return shown


def prune_unconfigured(conn: sqlite3.Connection, remotes: Sequence[RemoteConfig]) -> int:
    """Delete the cached state of every remote no longer configured (by name and host
    id); returns how many rows went. Run where a home starts following its remotes
    (``RemoteActions.follow``, the navigator's start) and by a follower whose remote
    was removed: removing a ``[[remotes]]`` entry removes what it left behind."""
    with write_transaction(conn) as tx:
        return remotes_ops.drop_unconfigured(
            tx, [(remote.name, remote.host_id) for remote in remotes])
