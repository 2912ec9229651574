"""`switchboard remote list|refresh`: cached state of other hosts (display only)."""

from __future__ import annotations

import argparse

from navigator.commands.output import emit


def register(sub: argparse._SubParsersAction) -> None:
    remote = sub.add_parser("remote", help="cached HostState of remote hosts")
    rs = remote.add_subparsers(dest="remote_command", metavar="ACTION", required=True)
    p = rs.add_parser("list", help="configured remotes and their cached state")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_list)
    p = rs.add_parser("refresh", help="fetch a remote's state over ssh (all when omitted)")
    p.add_argument("name", nargs="?")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_refresh)


def _list(args: argparse.Namespace) -> int:
    from core.session import open_engine

    engine = open_engine()
    rows = [dict(r) for r in engine.conn.execute(
        "SELECT remote_name, host_id, reachability, observed_at, last_attempt_at,"
        " bounded_error FROM host_state_cache ORDER BY remote_name")]
    cached = {r["remote_name"]: r for r in rows}
    out = [{"name": r.name, "host_id": r.host_id, "ssh_target": r.ssh_target,
            **{k: v for k, v in cached.get(r.name, {}).items() if k != "remote_name"}}
           for r in engine.config.remotes]
    emit(out, as_json=args.json, text="\n".join(
        f"{o['name']:<16} {o.get('reachability', 'never fetched'):<14} {o['ssh_target']}"
        for o in out) or "no remotes configured")
    return 0


def _refresh(args: argparse.Namespace) -> int:
    from core.remotes import refresh
    from core.session import open_engine

    engine = open_engine()
    names = [args.name] if args.name else [r.name for r in engine.config.remotes]
    results = [refresh(engine, name) for name in names]
    emit(results, as_json=args.json, text="\n".join(
        f"{r.remote_name}: {r.reachability}" + (f" ({r.error})" if r.error else "")
        for r in results) or "no remotes configured")
    return 0 if all(r.error is None for r in results) else 1
