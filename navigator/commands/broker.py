"""CLI groups ``fleet``, ``member``, ``message`` and ``inbox``: thin parsing over the broker.

Every command takes ``--broker-db PATH`` (default ``$SWITCHBOARD_HOME/broker.sqlite3``)
and ``--json``. Commands that type into or read panes (``message send``, ``message
wait``, ``member capture``, ``member ping``) use the views' tmux server: ``--tmux-socket``,
``$SWITCHBOARD_TMUX_SOCKET`` (set in every pane Switchboard launches), else the server
the config names. Never ``$TMUX``: run from the person's own tmux, that is another
server whose pane ids (``%3``) name unrelated panes. A Switchboard-launched agent's
pane is, in addition, only typed into or read on the server process the registry
recorded it on.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.broker.broker import (
    Broker,
    InvalidRequest,
    Message,
    PlacementSpec,
    UnknownFleet,
    UnknownMember,
    inbox_for_members,
)
from core.broker.delivery import DrainReport
from core.config.home import Home
from core.model.text import shown
from navigator.commands.output import complain, emit

if TYPE_CHECKING:
    from core.tmux.identity import ServerIdentity

# --------------------------------------------------------------------------- plumbing


def _common() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--broker-db", type=Path, default=None, metavar="PATH",
                        help="broker SQLite file (default: $SWITCHBOARD_HOME/broker.sqlite3)")
    parent.add_argument("--tmux-socket", default=None, metavar="PATH",
                        help="tmux server of the panes to type into or read (default: "
                             "$SWITCHBOARD_TMUX_SOCKET, else the views' server from the "
                             "config; never the tmux you run in)")
    parent.add_argument("--json", action="store_true", help="print JSON")
    return parent


def _placement_options(parser: argparse.ArgumentParser, *, pane_required: bool) -> None:
    parser.add_argument("--session", required=True, help="tmux session name")
    parser.add_argument("--window", required=True, help="tmux window id, e.g. @3")
    parser.add_argument("--pane", required=pane_required, default=None,
                        help="tmux pane id, e.g. %%7" + ("" if pane_required else
                                                        " (omit while the pane is pending)"))
    parser.add_argument("--backend", default="tmux")


def _broker_path(args: argparse.Namespace) -> Path:
    return args.broker_db if args.broker_db is not None else Home.from_env().broker_path


def _tmux_socket(args: argparse.Namespace) -> str | None:
    """The views' server (see the module docstring); None without any config."""
    from core.config.config import configured_views_socket

    if args.tmux_socket:
        return str(args.tmux_socket)
    if os.environ.get("SWITCHBOARD_TMUX_SOCKET"):
        return os.environ["SWITCHBOARD_TMUX_SOCKET"]
    home = Home.from_env()
    return configured_views_socket(home.config_path, home.root)


def _open(args: argparse.Namespace, *, create: bool = True) -> Broker:
    """Agents Switchboard launched are typed to only when shown and ready (the registry's
    gate, opened lazily); hand-registered members keep the plain rules."""
    from core.broker.membership import LazyRegistryGate

    return Broker.open(_broker_path(args), tmux_socket=_tmux_socket(args), create=create,
                       gate=LazyRegistryGate())


def _optional_fleet_id(broker: Broker, ref: str | None) -> int | None:
    """``_fleet_id`` of an optional ``--fleet``: None when it was not given."""
    return None if ref is None else _fleet_id(broker, ref)


def _fleet_id(broker: Broker, ref: str) -> int:
    """A fleet named by id or by name (live fleets; a name must be unique)."""
    ref = ref.strip()
    if ref.isdigit():
        return int(ref)
    found = [f for f in broker.list_fleets() if f.name == ref]
    if len(found) > 1:
        raise InvalidRequest(f"fleet name {ref!r} is used by fleets "
                             f"{', '.join(str(f.fleet_id) for f in found)}; use the id")
    if not found:
        raise UnknownFleet(f"no live fleet named {ref!r}; `switchboard fleet list` shows fleets")
    return found[0].fleet_id


def _member_id(broker: Broker, ref: str, fleet_id: int | None = None) -> int:
    """A member named by id or by name (active members, in ``fleet_id`` when given)."""
    from core.broker.membership import PERSON_AGENT, PERSON_NAME

    ref = ref.strip()
    if ref.isdigit():
        return int(ref)
    found = [e for e in broker.roster(fleet_id) if e.name == ref]
    if len(found) > 1 and ref == PERSON_NAME:
        # "person" is the person, as it is for the agents' tools; a task someone
        # titled "person" is still reached by its member id.
        found = [e for e in found if e.coding_agent == PERSON_AGENT] or found
    if len(found) > 1:
        raise InvalidRequest(f"member name {ref!r} is used by members "
                             f"{', '.join(str(e.member_id) for e in found)}; use the id "
                             "or --fleet")
    if not found:
        where = f" in fleet {fleet_id}" if fleet_id is not None else ""
        raise UnknownMember(f"no active member named {ref!r}{where}; "
                            "`switchboard member list` shows members")
    return found[0].member_id


def _missing(args: argparse.Namespace) -> bool:
    """Read-only listings of a broker that does not exist yet are simply empty."""
    return not _broker_path(args).exists()


def _report_delivery(report: DrainReport | None) -> None:
    if report is not None and report.not_notified is not None:
        complain("not_notified", report.not_notified.diagnostic())


def _message_line(message: Message, sender: str | None = None) -> str:
    """One message per line; ``sender`` (the member's name) where a person reads it."""
    who = shown(sender) if sender is not None else str(message.from_member_id)
    return (f"{message.message_id}\tfrom {who}\t{message.created_at}\t"
            f"{message.status.value}\t{shown(message.text)}")


class _MemberNames:
    """Member names for the stream pane, read once each from a read-only store: the
    person reads "from Fix the bug", not "from 3"."""

    def __init__(self, path: Path) -> None:
        from core.broker.broker import open_broker

        self._broker = Broker(open_broker(path, create=False, readonly=True))
        self._names: dict[int, str] = {}

    def of(self, member_id: int) -> str:
        if member_id not in self._names:
            try:
                self._names[member_id] = self._broker.get_member(member_id).name
            except UnknownMember:
                return str(member_id)
        return self._names[member_id]

    def close(self) -> None:
        self._broker.close()


def _lines(rows: list[str]) -> str:
    return "\n".join(rows) if rows else "(none)"


# --------------------------------------------------------------------------- fleet


def _fleet_create(args: argparse.Namespace) -> int:
    with _open(args) as broker:
        created = broker.create_fleet(
            args.name, director_name=args.director_name,
            director_description=args.director_description,
            placement=PlacementSpec(args.session, args.window, args.pane, args.coding_agent,
                                    args.backend))
    director = created.director.member
    emit(created, as_json=args.json,
         text=f"fleet {created.fleet.fleet_id} created; Director is member "
              f"{director.member_id} ({director.name}) in pane {args.pane}")
    return 0


def _fleet_list(args: argparse.Namespace) -> int:
    fleets: list[Any] = []
    if not _missing(args):
        with _open(args, create=False) as broker:
            fleets = broker.list_fleets(include_deleted=args.all)
    emit(fleets, as_json=args.json, text=_lines([
        f"{f.fleet_id}\t{shown(f.name or '-')}\tdirector {f.director_member_id}\t{f.created_at}"
        + (f"\tdeleted {f.deleted_at}" if f.deleted_at else "") for f in fleets]))
    return 0


def _fleet_delete(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        fleet_id = _fleet_id(broker, args.fleet_id)
        deletion = broker.delete_fleet(fleet_id)
    emit(deletion, as_json=args.json,
         text=f"fleet {fleet_id} deleted; {deletion.deregistered_members} members "
              "deregistered; messages kept")
    return 0


# --------------------------------------------------------------------------- member


def _member_register(args: argparse.Namespace) -> int:
    with _open(args) as broker:
        fleet_id = _fleet_id(broker, args.fleet)
        detail = broker.register_member(
            fleet_id, args.name, description=args.description,
            placement=PlacementSpec(args.session, args.window, args.pane, args.coding_agent,
                                    args.backend))
    emit(detail, as_json=args.json,
         text=f"member {detail.member.member_id} ({detail.member.name}) registered "
              f"in fleet {fleet_id}")
    return 0


def _member_place(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        args.member_id = _member_id(broker, args.member_id)
        current = broker.member_detail(args.member_id)
        agent = args.coding_agent or (current.placement.coding_agent
                                      if current.placement else None)
        detail = broker.place_member(args.member_id, PlacementSpec(
            args.session, args.window, args.pane, agent or "", args.backend))
    emit(detail, as_json=args.json,
         text=f"member {args.member_id} placed in {args.session} {args.window} "
              f"{args.pane or '(pane pending)'}")
    return 0


def _member_deregister(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        args.member_id = _member_id(broker, args.member_id)
        member = broker.deregister_member(args.member_id)
    emit(member, as_json=args.json, text=f"member {args.member_id} deregistered")
    return 0


def _member_delete(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        args.member_id = _member_id(broker, args.member_id)
        member = broker.delete_member(args.member_id)
    emit(member, as_json=args.json, text=f"member {args.member_id} deleted")
    return 0


def _member_list(args: argparse.Namespace) -> int:
    roster: list[Any] = []
    if not _missing(args):
        with _open(args, create=False) as broker:
            roster = broker.roster(_optional_fleet_id(broker, args.fleet))
    emit(roster, as_json=args.json, text=_lines([
        f"{e.member_id}\tfleet {e.fleet_id}\t{e.kind.value}\t{shown(e.name)}\t"
        f"{e.coding_agent or '-'}\t{e.mux_pane_id or '-'}\t"
        + ("idle -" if e.idle_seconds is None else f"idle {e.idle_seconds:.0f}s")
        for e in roster]))
    return 0


def _member_show(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        args.member_id = _member_id(broker, args.member_id)
        detail = broker.member_detail(args.member_id)
    m, p = detail.member, detail.placement
    text = "\n".join([
        f"member {m.member_id} ({m.name}), {m.kind.value} of fleet {m.fleet_id}, {m.status.value}",
        f"description: {m.description}",
        f"registered: {m.registered_at}"
        + (f", deregistered: {m.deregistered_at}" if m.deregistered_at else ""),
        (f"placement: {p.backend} {p.mux_session} {p.mux_window_id} "
         f"{p.mux_pane_id or '(pane pending)'} running {p.coding_agent}") if p
        else "placement: none",
        f"last activity: {detail.last_activity_at or '-'}",
    ])
    emit(detail, as_json=args.json, text=text)
    return 0


# --------------------------------------------------------------------------- message


def _message_send(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        fleet_id = _fleet_id(broker, args.fleet)
        sender = _member_id(broker, args.sender, fleet_id)
        args.recipient = _member_id(broker, args.recipient, fleet_id)
        result = broker.send(fleet_id, sender, args.recipient, args.text)
    delivery = result.delivery
    state = ("stored" if delivery is None
             else "notified" if result.message.message_id in delivery.notified
             else "not notified" if delivery.not_notified else "pending")
    emit(result, as_json=args.json,
         text=f"message {result.message.message_id} sent to member {args.recipient} ({state})")
    _report_delivery(delivery)
    return 0


def _message_poll(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        messages = broker.poll(_member_id(broker, args.member))
    emit(messages, as_json=args.json, text=_lines([_message_line(m) for m in messages]))
    return 0


def _message_ack(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        message = broker.ack(_member_id(broker, args.member), args.message_id)
    emit(message, as_json=args.json, text=f"message {args.message_id} ACKed")
    return 0


def _message_wait(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        result = broker.wait(_member_id(broker, args.member), args.timeout)
    emit(result, as_json=args.json,
         text="(timed out)" if result.timed_out
         else _lines([_message_line(m) for m in result.messages]))
    for report in result.deliveries:
        _report_delivery(report)
    return 1 if result.timed_out else 0


# --------------------------------------------------------------------------- inbox


def _inbox(args: argparse.Namespace) -> int:
    if any(not ref.strip().isdigit() for ref in args.member) and not _missing(args):
        with _open(args, create=False) as broker:
            args.member = [_member_id(broker, ref) for ref in args.member]
    args.member = [int(ref) if isinstance(ref, str) and ref.strip().isdigit() else ref
                   for ref in args.member]
    if args.stream:
        if len(args.member) != 1:
            complain("invalid_request", "--stream follows exactly one --member")
            return 2
        from core.broker.stream import follow_inbox

        names = _MemberNames(_broker_path(args))
        try:
            for message in follow_inbox(_broker_path(args), args.member[0],
                                        max_seconds=args.max_seconds):
                emit(message, as_json=args.json,
                     text=_message_line(message, names.of(message.from_member_id)))
                sys.stdout.flush()
        except KeyboardInterrupt:
            pass
        finally:
            names.close()
        return 0
    entries = inbox_for_members(_broker_path(args), args.member,
                                include_completed=args.include_completed)
    emit(entries, as_json=args.json, text=_lines([
        f"{e.message_id}\t{shown(e.from_name)} -> {shown(e.to_name)}\t{e.status.value}\t"
        f"{e.age_seconds:.0f}s\t{shown(e.text)}" for e in entries]))
    return 0


def _message_show(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        message = broker.get_message(args.message_id)
        sender = broker.get_member(message.from_member_id).name
        recipient = broker.get_member(message.to_member_id).name
    emit(message, as_json=args.json, text="\n".join([
        f"message {message.message_id} from {sender} (member {message.from_member_id}) "
        f"to {recipient} (member {message.to_member_id})",
        f"sent {message.created_at}; {message.status.value} since {message.status_timestamp}",
        message.text]))
    return 0


def _message_cancel(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        message = broker.cancel(_member_id(broker, args.sender), args.message_id)
    emit(message, as_json=args.json,
         text=f"message {args.message_id} cancelled; its recipient no longer sees it pending")
    return 0


def _message_broadcast(args: argparse.Namespace) -> int:
    with _open(args, create=False) as broker:
        fleet_id = _fleet_id(broker, args.fleet)
        results = broker.broadcast(fleet_id, _member_id(broker, args.sender, fleet_id),
                                   args.text)
    emit(results, as_json=args.json, text=_lines([
        f"message {r.message.message_id} sent to member {r.message.to_member_id}"
        for r in results]))
    for result in results:
        _report_delivery(result.delivery)
    return 0


def _pane_of(broker: Broker, member_id: int) -> str:
    detail = broker.member_detail(member_id)
    if detail.placement is None or detail.placement.mux_pane_id is None:
        raise InvalidRequest(f"member {member_id} ({detail.member.name}) has no pane; "
                             "there is nothing to capture or ping")
    return detail.placement.mux_pane_id


def _recorded_server(broker: Broker, member_id: int) -> ServerIdentity | None:
    """For a Switchboard-launched agent, the server process the registry recorded its
    pane on (a read happens only there); None for a hand-registered member."""
    from core.broker.delivery import managed_frame
    from core.broker.membership import LazyRegistryGate
    from core.tmux.identity import ServerIdentity

    frame_id = managed_frame(broker.get_member(member_id).description)
    if frame_id is None:
        return None
    gate = LazyRegistryGate()
    try:
        server = gate.server_for(frame_id)
    finally:
        gate.close()
    if server is None:
        raise InvalidRequest(f"member {member_id}'s agent is not running (the registry "
                             "records no live pane for it); start it with n in the navigator")
    return ServerIdentity(server.socket_path, server.server_pid, server.server_start_time)


def _member_capture(args: argparse.Namespace) -> int:
    from core.tmux.probe import capture_lines

    with _open(args, create=False) as broker:
        member_id = _member_id(broker, args.member_id)
        pane = _pane_of(broker, member_id)
        server = _recorded_server(broker, member_id)
    # A person at a terminal sees the pane's colours (SGR only); JSON and pipes get text.
    colours = not args.json and sys.stdout.isatty()
    lines = capture_lines(_tmux_socket(args), pane, args.lines, server, colours=colours)
    emit({"member_id": member_id, "pane": pane, "lines": lines}, as_json=args.json,
         text="\n".join(lines), colours=colours)
    return 0


def _member_ping(args: argparse.Namespace) -> int:
    from core.tmux.probe import probe_pane

    with _open(args, create=False) as broker:
        member_id = _member_id(broker, args.member_id)
        name = broker.get_member(member_id).name
        pane = _pane_of(broker, member_id)
        server = _recorded_server(broker, member_id)
    probe = probe_pane(_tmux_socket(args), pane, server)
    emit({"member_id": member_id, "pane": pane, "alive": probe.alive,
          "takes_input": probe.takes_input, "command": probe.command, "problem": probe.problem},
         as_json=args.json,
         text=f"member {member_id} ({name}) pane {pane}: " + (
             probe.problem or f"alive, {'takes input' if probe.takes_input else 'parked'}"
                              f", running {probe.command}"))
    return 0 if probe.alive else 1


# --------------------------------------------------------------------------- registration


def register(subparsers: argparse._SubParsersAction) -> None:
    common = _common()

    fleet = subparsers.add_parser("fleet", help="broker fleets (a Director and its members)")
    fleet_sub = fleet.add_subparsers(dest="fleet_command", metavar="ACTION", required=True)
    p = fleet_sub.add_parser("create", parents=[common],
                             help="bootstrap a fleet with its Director and placement")
    p.add_argument("name", nargs="?", default=None)
    p.add_argument("--director-name", required=True)
    p.add_argument("--director-description", default="Director")
    _placement_options(p, pane_required=True)
    p.add_argument("--coding-agent", required=True)
    p.set_defaults(handler=_fleet_create)
    p = fleet_sub.add_parser("list", parents=[common], help="live fleets")
    p.add_argument("--all", action="store_true", help="include deleted fleets")
    p.set_defaults(handler=_fleet_list)
    p = fleet_sub.add_parser("delete", parents=[common],
                             help="soft delete: deregister members, keep messages")
    p.add_argument("fleet_id", metavar="FLEET", help="fleet id or name")
    p.set_defaults(handler=_fleet_delete)

    member = subparsers.add_parser("member", help="broker members and their placements")
    member_sub = member.add_subparsers(dest="member_command", metavar="ACTION", required=True)
    p = member_sub.add_parser("register", parents=[common], help="add a member to a fleet")
    p.add_argument("--fleet", required=True, help="fleet id or name")
    p.add_argument("--name", required=True)
    p.add_argument("--description", default="")
    _placement_options(p, pane_required=False)
    p.add_argument("--coding-agent", required=True)
    p.set_defaults(handler=_member_register)
    p = member_sub.add_parser("place", parents=[common],
                              help="set or move a member's placement (takes the pane locks)")
    p.add_argument("member_id", metavar="MEMBER", help="member id or name")
    _placement_options(p, pane_required=False)
    p.add_argument("--coding-agent", default=None)
    p.set_defaults(handler=_member_place)
    for name, handler, text in (
        ("deregister", _member_deregister, "mark a member deregistered"),
        ("delete", _member_delete, "delete a member without messages"),
        ("show", _member_show, "registration, description, placement and activity"),
    ):
        p = member_sub.add_parser(name, parents=[common], help=text)
        p.add_argument("member_id", metavar="MEMBER", help="member id or name")
        p.set_defaults(handler=handler)
    p = member_sub.add_parser("capture", parents=[common],
                              help="the last lines of a member's pane (one tmux process)")
    p.add_argument("member_id", metavar="MEMBER", help="member id or name")
    p.add_argument("--lines", type=int, default=40, help="how many lines (default 40)")
    p.set_defaults(handler=_member_capture)
    p = member_sub.add_parser("ping", parents=[common],
                              help="is the member's pane alive and taking input?")
    p.add_argument("member_id", metavar="MEMBER", help="member id or name")
    p.set_defaults(handler=_member_ping)
    p = member_sub.add_parser("list", parents=[common],
                              help="active members of live fleets with idle time")
    p.add_argument("--fleet", default=None, help="fleet id or name")
    p.set_defaults(handler=_member_list)

    message = subparsers.add_parser("message", help="send, poll, ACK and wait for messages")
    message_sub = message.add_subparsers(dest="message_command", metavar="ACTION",
                                         required=True)
    p = message_sub.add_parser("send", parents=[common],
                               help="store a message and notify the recipient's pane")
    p.add_argument("--fleet", required=True, help="fleet id or name")
    p.add_argument("--from", dest="sender", required=True, metavar="MEMBER",
                   help="member id or name")
    p.add_argument("--to", dest="recipient", required=True, metavar="MEMBER",
                   help="member id or name")
    p.add_argument("text")
    p.set_defaults(handler=_message_send)
    p = message_sub.add_parser("broadcast", parents=[common],
                               help="the same message to every other active member")
    p.add_argument("--fleet", required=True, help="fleet id or name")
    p.add_argument("--from", dest="sender", required=True, metavar="MEMBER",
                   help="member id or name")
    p.add_argument("text")
    p.set_defaults(handler=_message_broadcast)
    p = message_sub.add_parser("show", parents=[common], help="one message, in full")
    p.add_argument("message_id", type=int)
    p.set_defaults(handler=_message_show)
    p = message_sub.add_parser("cancel", parents=[common],
                               help="withdraw an unread message you sent")
    p.add_argument("--from", dest="sender", required=True, metavar="MEMBER",
                   help="the sender's member id or name")
    p.add_argument("message_id", type=int)
    p.set_defaults(handler=_message_cancel)
    p = message_sub.add_parser("poll", parents=[common], help="pending messages, oldest first")
    p.add_argument("--member", required=True, help="member id or name")
    p.set_defaults(handler=_message_poll)
    p = message_sub.add_parser("ack", parents=[common], help="consume a message")
    p.add_argument("--member", required=True, help="member id or name")
    p.add_argument("message_id", type=int)
    p.set_defaults(handler=_message_ack)
    p = message_sub.add_parser("wait", parents=[common],
                               help="block until messages are pending (exit 1 on timeout)")
    p.add_argument("--member", required=True, help="member id or name")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS")
    p.set_defaults(handler=_message_wait)

    p = subparsers.add_parser("inbox", parents=[common],
                              help="members' messages; --stream follows one member read-only")
    p.add_argument("--member", action="append", required=True,
                   help="member id or name (repeatable)")
    p.add_argument("--stream", action="store_true")
    p.add_argument("--max-seconds", type=float, default=None, help="stop streaming after this")
    p.add_argument("--include-completed", action="store_true")
    p.set_defaults(handler=_inbox)
