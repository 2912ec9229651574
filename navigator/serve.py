"""The navigator in a browser: Textual's own web serving (textual-serve), behind a token.

``switchboard serve`` runs textual-serve's aiohttp server on 127.0.0.1 (the person
reaches it through their own tunnel: ssh -L, a VPN) and every page, asset and
websocket behind one random token. Each browser connection runs its own
``switchboard ui`` process (textual-serve's model), so every key works as in a
tmux pane and every request is the same engine request the terminal navigator
makes; the browser never reaches tmux or SQLite itself.

The token: ``secrets.token_urlsafe(32)``, printed once in the URL to open
(``http://127.0.0.1:N/?token=...``). A request carrying it in ``?token=`` gets it
back as an HttpOnly, SameSite=Strict cookie named for this server's port
(``sb_serve_token_N``: cookies are scoped to a host, not a port, so two serves on
one machine would otherwise overwrite each other's), so the page's own assets and
websocket (which cannot carry the query) pass too. Anything else gets 403 before
any handler runs; a websocket from another origin is refused even with the cookie
(a page elsewhere cannot drive the navigator through the person's browser).
Tokens are compared in constant time.

What one serve may cost is bounded (a holder of the token, or a runaway page,
must not be able to take the machine): a tab's terminal is at most
``MAX_COLUMNS`` x ``MAX_ROWS`` cells whatever the browser asks, at most
``MAX_TABS`` tabs run at once (the next is refused with a page that says so), and
every tab's navigator runs in its own process group that ends with its tab, with
serve's shutdown, and with serve itself even when serve is killed outright (each
child holds the read end of a pipe only serve can write: the kernel closes it when
serve dies, and the child ends its group; see ``navigator.commands.serve``).

The page is this module's own (``PAGE``), not textual-serve's template, which
loads its font from a public font host: every asset is served from this server
(textual-serve's script, xterm's stylesheet and its bundled Roboto Mono), the page
carries a Content-Security-Policy that lets it reach nothing else, and the static
folder is never listed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import html
import json
import logging
import math
import os
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.web_runner import GracefulExit
from textual_serve.app_service import AppService
from textual_serve.server import Server

from core.model.errors import SwitchboardError

COOKIE_PREFIX = "sb_serve_token_"
DEFAULT_HOST = "127.0.0.1"
REFUSED_TEXT = ("403 Forbidden: this Switchboard navigator needs its token; open the URL "
                "`switchboard serve` printed (it ends in ?token=...)\n")

#: The largest terminal a tab gets, in cells. A 4K screen at the page's default
#: 16 px font is about 400 x 110 cells; 500 x 200 leaves room for small fonts and
#: tall screens while keeping a tab's navigator in the tens of megabytes (a
#: 30000 x 30000 request grew one to 6.7 GB). Larger requests get these bounds.
MAX_COLUMNS = 500
MAX_ROWS = 200
#: Tabs (browser connections, each one navigator process) one serve runs at once.
MAX_TABS = 8
#: Seconds a tab's navigator gets to quit when its tab closes or serve stops,
#: before its process group is killed.
STOP_GRACE = 3.0
#: Seconds a tab's navigator may leave its input unread (its stdin pipe full) before
#: the tab is ended as stuck: Textual reads stdin on a thread of its own, so a live
#: navigator drains it at once even while it draws.
INPUT_TIMEOUT = 5.0
#: The font size the page may ask xterm.js for (``?fontsize=``), in pixels.
FONT_SIZES = (8, 48)

FULL_TEXT = (f"503 Service Unavailable: this Switchboard serve already runs {MAX_TABS} "
             "browser tabs, its limit; close one of them, then reload this page\n")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def cookie_name(port: int) -> str:
    """The token cookie of the serve on ``port`` (a cookie reaches every port of its
    host, so the name is what keeps two serves' tokens apart)."""
    return f"{COOKIE_PREFIX}{port}"


def cells(value: object, default: int, limit: int) -> int:
    """A terminal dimension from the browser (a query string or a JSON number), as an
    int from 1 to ``limit``; anything that is not a number is ``default``."""
    if isinstance(value, bool):
        return default
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            return default
    if isinstance(value, float):
        if not math.isfinite(value):
            return default
        value = int(value)
    if not isinstance(value, int):
        return default
    return max(1, min(limit, value))


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0: a free port), bound before anything is
    printed, so the URL shown is one that already accepts connections."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise SwitchboardError(
                f"port {port} on {host} is already in use (another program, or another "
                "`switchboard serve`, listens there); give another --port, or leave --port "
                "out for a free one", code="port_in_use") from None
        raise SwitchboardError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; give another --port "
            "(1024 to 65535), or leave --port out for a free one",
            code="port_unavailable") from None
    return sock


def tab_argv(lifeline: int) -> list[str]:
    """What each browser connection runs: this interpreter's ``switchboard ui
    --browser``, by way of ``serve --lifeline FD`` (which ends it when serve ends)."""
    return [sys.executable, "-m", "navigator.cli", "serve", "--lifeline", str(lifeline)]


def navigator_command() -> str:
    """textual-serve's ``command`` (a shell string, its title's default); a tab runs
    ``tab_argv``, without a shell."""
    return shlex.join([sys.executable, "-m", "navigator.cli", "ui", "--browser"])


class Tab(AppService):
    """One browser tab's navigator: textual-serve's AppService, started without a
    shell in a process group of its own that holds ``lifeline``, and stopped for
    certain (asked to quit, then killed with its group after ``STOP_GRACE``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lifeline: int | None = None
        self._stopped: asyncio.Future[None] | None = None

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
        read_end, self.lifeline = os.pipe()  # both close-on-exec: no other child holds them
        try:
            self._process = process = await asyncio.create_subprocess_exec(
                *tab_argv(read_end),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._build_environment(width=width, height=height),
                pass_fds=(read_end,), start_new_session=True)
        finally:
            os.close(read_end)
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def stop(self) -> None:
        """Idempotent: the tab's handler and serve's shutdown may both call it."""
        if self._stopped is None:
            self._stopped = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopped)

    async def _stop(self) -> None:
        """Quit, within ``STOP_GRACE`` all told (a navigator that stopped reading its
        stdin cannot block even the quit request), else the group is killed."""
        process = self._process
        try:
            if process is not None:
                try:
                    await asyncio.wait_for(self._quit(process), STOP_GRACE)
                except TimeoutError:
                    self.kill()
                    await process.wait()
            if self._task is not None:
                try:  # its output ends with the group; bounded all the same
                    await asyncio.wait_for(self._task, STOP_GRACE)
                except TimeoutError:
                    pass
                self._task = None
        finally:
            if self.lifeline is not None:
                os.close(self.lifeline)
                self.lifeline = None

    async def _quit(self, process: asyncio.subprocess.Process) -> None:
        if self._task is not None and process.returncode is None:
            await self._download_manager.cancel_app_downloads(
                app_service_id=self.app_service_id)
            with contextlib.suppress(Exception):
                await self.send_meta({"type": "quit"})
        await process.wait()

    def kill(self) -> None:
        """SIGKILL the tab's whole process group (its leader not yet reaped, so the
        group id cannot have been reused)."""
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)


def _message(raw: str) -> tuple[str, Any] | None:
    """A browser message as (type, payload), or None when it is not one."""
    try:
        envelope = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
        return None
    return envelope[0], (envelope[1] if len(envelope) > 1 else None)


PAGE = """<!DOCTYPE html>
<html>
  <head>
    <meta charset="utf-8">
    <title>{title}</title>
    <link rel="stylesheet" href="{static}css/xterm.css">
    <script src="{static}js/textual.js"></script>
    <style>
      @font-face {{
        font-family: "Roboto Mono";
        font-style: normal;
        font-weight: 100 700;
        src: url("{static}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype");
      }}
      @font-face {{
        font-family: "Roboto Mono";
        font-style: italic;
        font-weight: 100 700;
        src: url("{static}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype");
      }}
      body {{ background: #0c181f; }}
      .dialog-container {{
        position: absolute; width: 100vw; height: 100vh; display: flex;
        align-items: center; justify-content: center; z-index: 10;
      }}
      .shade {{
        position: absolute; width: 100%; height: 100%; background: #0c181f;
        background-image: url("{static}images/background.png");
      }}
      .intro {{
        width: 640px; height: 240px; font-size: 16px; z-index: 20;
        font-family: "Roboto Mono", menlo, monospace; text-align: center;
        color: rgba(255, 255, 255, 0.95); background-color: #12232d; display: flex;
        align-items: center; justify-content: center; margin: 32px;
      }}
      body.-first-byte .intro-dialog, body.-first-byte .intro-dialog .shade {{
        opacity: 0; transition: opacity 0.3s ease-out; display: none;
      }}
      body .textual-terminal {{ opacity: 0; transition: opacity 0.3s ease-out; }}
      body.-first-byte .textual-terminal {{ opacity: 1; transition: opacity 0.3s ease-out; }}
      body button {{
        padding: 16px 32px; background-color: #5e0ba7; color: rgba(255, 255, 255, 0.95);
        border: none; font-family: "Roboto Mono", menlo, monospace; margin: 16px;
        display: block;
      }}
      button:hover {{ background: #ac5af4; cursor: pointer; }}
      .closed-dialog {{ opacity: 0; display: none; }}
      body.-closed .closed-dialog {{ opacity: 1; display: flex; }}
      #start {{ display: none; }}
      #start.-delay {{ display: flex; }}
    </style>
    <script>
      function getStartUrl() {{
        const url = new URL(window.location.href);
        const params = new URLSearchParams(url.search);
        params.delete("delay");
        return url.pathname + "?" + params.toString();
      }}
      function refresh() {{ window.location.href = getStartUrl(); }}
    </script>
  </head>
  <body>
    <div class="dialog-container intro-dialog">
      <div class="shade"></div>
      <div class="intro">
        <div>{title}</div>
        <button type="button" onclick="refresh()" id="start">Start</button>
      </div>
    </div>
    <div class="dialog-container closed-dialog">
      <div class="shade"></div>
      <div class="intro">
        <div class="message">Session ended.</div>
        <button type="button" onclick="refresh()">Restart</button>
      </div>
    </div>
    <div id="terminal" class="textual-terminal"
         data-session-websocket-url="{websocket}" data-font-size="{font_size}"></div>
  </body>
</html>
"""


class TokenServer(Server):
    """textual-serve's Server with every route behind ``token``, its own page, and
    bounded tabs."""

    def __init__(self, command: str, *, host: str, port: int, token: str) -> None:
        super().__init__(command, host=host, port=port, title="Switchboard",
                         public_url=f"http://{host}:{port}")
        self.token = token
        self.origin = f"http://{host}:{port}"
        self.cookie = cookie_name(port)
        self.tabs: set[Tab] = set()
        self.sockets: set[web.WebSocketResponse] = set()
        self.closing = False

    def initialize_logging(self) -> None:
        """textual-serve's logging, without aiohttp's access log: its lines carry the
        request's query, which is where the token travels."""
        super().initialize_logging()
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    @property
    def url(self) -> str:
        return f"{self.origin}/?token={self.token}"

    @property
    def full(self) -> bool:
        return len(self.tabs) >= MAX_TABS

    def _allowed(self, request: web.Request) -> bool:
        given = request.query.get("token") or request.cookies.get(self.cookie) or ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return False
        origin = request.headers.get("Origin")
        return origin is None or origin == self.origin

    @property
    def policy(self) -> str:
        """The page may load and connect to this server only."""
        socket_origin = "ws:" + self.origin.split(":", 1)[1]
        return ("default-src 'none'; script-src 'self' 'unsafe-inline'; "
                "style-src 'self' 'unsafe-inline'; font-src 'self'; img-src 'self' data:; "
                f"connect-src 'self' {socket_origin}; base-uri 'none'; form-action 'none'; "
                "frame-ancestors 'none'")

    async def _make_app(self) -> web.Application:
        """textual-serve's routes, with a static folder that is not listed."""
        app = web.Application()

        @web.middleware
        async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
            if not self._allowed(request):
                return web.Response(status=403, text=REFUSED_TEXT)
            response = await handler(request)
            if request.query.get("token") and not response.prepared:
                response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict",
                                    path="/")
            response.headers.setdefault("Cache-Control", "no-store")
            response.headers.setdefault("Referrer-Policy", "no-referrer")
            response.headers.setdefault("X-Content-Type-Options", "nosniff")
            return response

        app.middlewares.append(require_token)
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.get("/download/{key}", self.handle_download, name="download"),
            web.static("/static", self.statics_path, show_index=False, follow_symlinks=False,
                       name="static"),
        ])
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """This module's ``PAGE``: every URL on it is this server's."""
        if self.full:
            return web.Response(status=503, text=FULL_TEXT)
        size = cells(request.query.get("fontsize", "16"), 16, FONT_SIZES[1])
        page = PAGE.format(
            title=html.escape(self.title), static="/static/",
            websocket=html.escape("ws:" + self.origin.split(":", 1)[1] + "/ws"),
            font_size=max(FONT_SIZES[0], size))
        response = web.Response(text=page, content_type="text/html")
        response.headers["Content-Security-Policy"] = self.policy
        return response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: its navigator runs while the websocket is open, at a clamped size;
        refused (503, before the upgrade) when ``MAX_TABS`` already run."""
        if self.closing:
            raise web.HTTPServiceUnavailable(text="503: this Switchboard serve is stopping\n")
        if self.full:
            raise web.HTTPServiceUnavailable(text=FULL_TEXT)
        width = cells(request.query.get("width", "80"), 80, MAX_COLUMNS)
        height = cells(request.query.get("height", "24"), 24, MAX_ROWS)
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=1 << 20)
        tab = Tab(self.command, write_bytes=websocket.send_bytes,
                  write_str=websocket.send_str, close=websocket.close,
                  download_manager=self.download_manager, debug=self.debug)
        self.tabs.add(tab)  # before any await: the count holds for concurrent requests
        try:
            await websocket.prepare(request)
            self.sockets.add(websocket)
            await tab.start(width, height)
            await self._relay(websocket, tab)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # a tab's failure is its own, serve goes on
            logging.getLogger("textual-serve").error("browser tab ended: %s", error)
        finally:
            self.sockets.discard(websocket)
            await tab.stop()
            self.tabs.discard(tab)
        return websocket

    async def _relay(self, websocket: web.WebSocketResponse, tab: Tab) -> None:
        """The browser's messages to the tab's navigator; a resize is clamped like the
        first size, and anything malformed is dropped. A navigator that leaves its
        input unread for ``INPUT_TIMEOUT`` ends the tab (waiting on it would keep the
        tab, and its navigator, past the browser's close)."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            parsed = _message(message.data)
            if parsed is None:
                continue
            kind, data = parsed
            if kind == "ping":
                await websocket.send_json(["pong", data])
                continue
            try:
                await asyncio.wait_for(self._forward(tab, kind, data), INPUT_TIMEOUT)
            except TimeoutError:
                logging.getLogger("textual-serve").error(
                    "a browser tab's navigator stopped reading its input; tab ended")
                return

    @staticmethod
    async def _forward(tab: Tab, kind: str, data: Any) -> None:
        if kind == "stdin" and isinstance(data, str):
            await tab.send_bytes(data.encode("utf-8"))
        elif kind == "resize" and isinstance(data, dict):
            await tab.set_terminal_size(cells(data.get("width"), 80, MAX_COLUMNS),
                                        cells(data.get("height"), 24, MAX_ROWS))
        elif kind == "blur":
            await tab.blur()
        elif kind == "focus":
            await tab.focus()

    async def on_startup(self, app: web.Application) -> None:
        """The URL to open, on one line of its own (no logo: the person copies it)."""
        print(f"Switchboard navigator: {self.url}", flush=True)
        print(f"Bound to {self.host} only; reach it through your own tunnel (ssh -L). "
              "Ctrl+C stops it.", flush=True)

    async def on_shutdown(self, app: web.Application) -> None:
        """Every tab ends before the event loop does: websockets closed, navigators
        quit or killed and reaped (a child reaped after the loop closed is what
        printed asyncio's "loop is closed" warnings)."""
        self.closing = True
        await asyncio.gather(*(ws.close(code=WSCloseCode.GOING_AWAY,
                                        message=b"switchboard serve stopped")
                               for ws in list(self.sockets)), return_exceptions=True)
        await asyncio.gather(*(tab.stop() for tab in list(self.tabs)), return_exceptions=True)

    def serve_on(self, sock: socket.socket) -> None:
        """Run on the listening ``sock`` until SIGINT or SIGTERM."""
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self.request_exit)
        try:
            web.run_app(self._make_app(), sock=sock, handle_signals=False, loop=loop,
                        print=None, shutdown_timeout=STOP_GRACE + 2, access_log=None)
        except (GracefulExit, KeyboardInterrupt):
            pass
        finally:
            asyncio.set_event_loop(None)


def serve(port: int | None = None, *, host: str = DEFAULT_HOST,
          token: str | None = None) -> None:
    """Run until interrupted; a port that cannot be listened on is a SwitchboardError."""
    sock = listen(host, port or 0)
    server = TokenServer(navigator_command(), host=host, port=int(sock.getsockname()[1]),
                         token=token or secrets.token_urlsafe(32))
    server.serve_on(sock)
