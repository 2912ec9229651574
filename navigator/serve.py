"""The navigator in a browser: Textual's own web serving (textual-serve), behind a token.

``switchboard serve`` runs textual-serve's aiohttp server on 127.0.0.1 (the person
reaches it through their own tunnel: ssh -L, a VPN) and every page, asset and
websocket behind one random token. Each browser connection runs its own
``switchboard ui`` process (textual-serve's model), so every key works as in a
tmux pane and every request is the same engine request the terminal navigator
makes; the browser never reaches tmux or SQLite itself.

The token: ``secrets.token_urlsafe(32)``, printed once in the URL to open
(``http://127.0.0.1:N/?token=...``). A request carrying it in ``?token=`` gets it
back as an HttpOnly, SameSite=Strict cookie scoped to this server, so the page's
own assets and websocket (which cannot carry the query) pass too. Anything else
gets 403 before any handler runs; a websocket from another origin is refused
even with the cookie (a page elsewhere cannot drive the navigator through the
person's browser). Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import shlex
import socket
import sys
from collections.abc import Awaitable, Callable

from aiohttp import web
from textual_serve.server import Server

COOKIE = "sb_serve_token"
DEFAULT_HOST = "127.0.0.1"
REFUSED_TEXT = ("403 Forbidden: this Switchboard navigator needs its token; open the URL "
                "`switchboard serve` printed (it ends in ?token=...)\n")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def free_port(host: str = DEFAULT_HOST) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def navigator_command() -> str:
    """What each browser connection runs: this interpreter's ``switchboard ui``."""
    return shlex.join([sys.executable, "-m", "navigator.cli", "ui", "--browser"])


class TokenServer(Server):
    """textual-serve's Server with every route behind ``token``."""

    def __init__(self, command: str, *, host: str, port: int, token: str) -> None:
        super().__init__(command, host=host, port=port, title="Switchboard",
                         public_url=f"http://{host}:{port}")
        self.token = token
        self.origin = f"http://{host}:{port}"

    def initialize_logging(self) -> None:
        """textual-serve's logging, without aiohttp's access log: its lines carry the
        request's query, which is where the token travels."""
        super().initialize_logging()
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    @property
    def url(self) -> str:
        return f"{self.origin}/?token={self.token}"

    def _allowed(self, request: web.Request) -> bool:
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return False
        origin = request.headers.get("Origin")
        return origin is None or origin == self.origin

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()

        @web.middleware
        async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
            if not self._allowed(request):
                return web.Response(status=403, text=REFUSED_TEXT)
            response = await handler(request)
            if request.query.get("token") and not response.prepared:
                response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict",
                                    path="/")
            response.headers.setdefault("Cache-Control", "no-store")
            response.headers.setdefault("Referrer-Policy", "no-referrer")
            return response

        app.middlewares.insert(0, require_token)
        return app

    async def on_startup(self, app: web.Application) -> None:
        """The URL to open, on one line of its own (no logo: the person copies it)."""
        print(f"Switchboard navigator: {self.url}", flush=True)
        print(f"Bound to {self.host} only; reach it through your own tunnel (ssh -L). "
              "Ctrl+C stops it.", flush=True)


def serve(port: int | None = None, *, host: str = DEFAULT_HOST,
          token: str | None = None) -> None:
    """Run until interrupted."""
    server = TokenServer(navigator_command(), host=host, port=port or free_port(host),
                         token=token or secrets.token_urlsafe(32))
    server.serve()
