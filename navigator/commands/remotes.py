"""`switchboard remote list|refresh|open`: cached state of other hosts (display only),
and a local window running `ssh -t` into a remote project's view (the remote engine
authorizes everything there)."""

from __future__ import annotations

import argparse

from core.model.text import shown
from navigator.commands.output import emit, say


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
    p = rs.add_parser("follow", help="follow a remote live in the foreground: one ssh, every "
                                     "HostState it streams validated and cached (what the "
                                     "navigator starts per remote)")
    p.add_argument("name", help="the remote's name ([[remotes]] name)")
    p.set_defaults(handler=_follow)
    p = rs.add_parser("open", help="open a remote project's view in a local window (ssh -t)")
    p.add_argument("name", help="the remote's name ([[remotes]] name)")
    p.add_argument("project", help="the project's name on that host")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_open)


def _list(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine

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
        + (f"  ({shown(o['bounded_error'])})" if o.get("bounded_error") else "")
        for o in out) or "no remotes configured")
    return 0


def _refresh(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.state.remotes import refresh

    engine = open_engine()
    names = [args.name] if args.name else [r.name for r in engine.config.remotes]
    results = [refresh(engine, name) for name in names]
    emit(results, as_json=args.json, text="\n".join(
        f"{r.remote_name}: {r.reachability}" + (f" ({shown(r.error)})" if r.error else "")
        for r in results) or "no remotes configured")
    return 0 if all(r.error is None for r in results) else 1


def _open(args: argparse.Namespace) -> int:
    from core.engine.open import open_engine
    from core.state.remote_open import open_remote, remote_by_name

    engine = open_engine(with_stage=True)
    window = open_remote(engine, remote_by_name(engine, args.name), args.project)
    emit(window, as_json=args.json,
         text=f"{'opened' if window.created else 'selected'} window {window.window_id}: "
              f"{' '.join(window.argv)}")
    return 0


def _follow(args: argparse.Namespace) -> int:
    from core.config.home import Home
    from core.context.session import open_reader
    from core.remote.follower import Follower
    from core.remote.interest import follower_running, interest
    from core.state.remote_open import remote_by_name

    home = Home.from_env()
    reader = open_reader(home)
    try:
        remote = remote_by_name(reader, args.name)  # type: ignore[arg-type]
    finally:
        reader.conn.close()
    if follower_running(home, remote):
        say(f"{args.name} is already followed by another process")
        return 0
    with interest(home):
        return Follower(home, args.name, keep=True).run()
