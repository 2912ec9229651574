"""What a woken navigator pane runs: hand this pane to the warm navigator server.

Run by path (``python -I -S wake_client.py SOCKET TMUX SERVER START -- NAVIGATOR
ARGV...``), standard
library only, so it starts in ~20 ms: a cold navigator pays ~0.3 s of imports before
it can draw anything, the warm server (``navigator.warm``) has paid them once. This
process stays the pane's process (its pid is ``pane_pid``, its exit status the
pane's): it sends the server its terminal (fds 0, 1, 2 over ``SCM_RIGHTS``), its
environment, its directory and the navigator's arguments; the server forks a child
that runs the navigator on that terminal. Signals the pane gets (``SIGWINCH`` on a
resize, ``SIGHUP``/``SIGTERM`` when tmux ends the pane) are forwarded to the child,
and the child's exit status becomes this process's, so a crashed navigator leaves a
dead pane that reconcile revives exactly as before.

No server answering (not started yet, gone after its idle time, refused): this
process asks tmux to start one (``TMUX -S SERVER run-shell -b START``: a tmux job, so
it descends from the tmux server) and becomes the cold navigator itself (``exec``):
a wake never fails for want of the server, and the next one finds it.

Protocol, one connection per pane: the client sends, with the three fds, one
message ``b"SBWAKE1\\0"``, the body's length (4 bytes, big-endian), the body
(NUL-separated: the directory, the number of arguments, the arguments, then
``NAME=VALUE`` environment entries), and sends nothing more (its connection closing
tells the child that the pane went); the server answers ``pid N\\n`` (the child),
later the child writes ``exit N\\n`` when the navigator ends. End of file without
``exit`` means the child died of a signal.
"""

import os
import signal
import socket
import stat
import sys

MAGIC = b"SBWAKE1\0"
ENV_PANE_PID = "SWITCHBOARD_NAVIGATOR_PANE_PID"
"""Given to the navigator: the pid of its pane (this process), which parking compares
with ``pane_pid`` (``core.memory.parking.own_pane_pid``)."""
FORWARDED = (signal.SIGWINCH, signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGQUIT,
             signal.SIGCONT)
CONNECT_TIMEOUT_S = 2.0


def _message(argv: list[str]) -> bytes:
    env = dict(os.environ)
    env[ENV_PANE_PID] = str(os.getpid())
    fields = [os.getcwd(), str(len(argv)), *argv, *(f"{k}={v}" for k, v in env.items())]
    body = b"\0".join(os.fsencode(field) for field in fields)
    return MAGIC + len(body).to_bytes(4, "big") + body


def _start_server(tmux: str, server: str, start: str) -> None:
    """``tmux run-shell -b START`` in a grandchild (nothing left for the navigator this
    process becomes to reap); a failure only costs the next wake its warm start."""
    child = os.fork()
    if child == 0:
        try:
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.execvp(tmux, [tmux, "-S", server, "run-shell", "-b", start])
        finally:
            os._exit(0)
    os.waitpid(child, 0)


def _cold(argv: list[str]) -> None:
    os.execv(argv[0], argv)


def _private_folder(path: str) -> bool:
    """Whether the socket's folder is this user's own, mode 0700 (not a link): in any
    other folder the socket could be someone else's, who would get this terminal."""
    try:
        info = os.lstat(os.path.dirname(path) or ".")
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & 0o077)


def _handoff(path: str, argv: list[str]) -> int | None:
    """The navigator's exit status once it ends; None when no server took the pane."""
    if not _private_folder(path):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_S)
    try:
        sock.connect(path)
        socket.send_fds(sock, [_message(argv)], [0, 1, 2])
        reader = sock.makefile("rb")
        first = reader.readline()
    except OSError:
        sock.close()
        return None
    if not first.startswith(b"pid "):
        sock.close()
        return None
    child = int(first.split()[1])
    sent: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if signum != signal.SIGWINCH and signum != signal.SIGCONT:
            sent.append(signum)
        try:
            os.kill(child, signum)
        except OSError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    sock.settimeout(None)
    status: int | None = None
    while True:
        try:
            line = reader.readline()
        except OSError:
            break
        if not line:
            break
        if line.startswith(b"exit "):
            status = int(line.split()[1])
    if status is not None:
        return status
    # The child died of a signal: die of the same one when it was forwarded (as the
    # cold navigator would have), else a plain failure that reconcile revives.
    if sent:
        signal.signal(sent[-1], signal.SIG_DFL)
        os.kill(os.getpid(), sent[-1])
    return 1


def main(args: list[str]) -> int:
    if len(args) < 6 or args[4] != "--":
        print("usage: wake_client.py SOCKET TMUX SERVER START -- NAVIGATOR ARGV...",
              file=sys.stderr)
        return 2
    path, tmux, server, start, argv = args[0], args[1], args[2], args[3], args[5:]
    status = _handoff(path, argv)
    if status is None:
        try:
            _start_server(tmux, server, start)
        except OSError:
            pass
        _cold(argv)
    return status if status is not None else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
