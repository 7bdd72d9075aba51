"""textual-serve, kept for the person who started it: a secret path, and Host and Origin checks.

The debugger shows prompts, tool results and run ids. A browser lets any page it has open send
requests to loopback, and a WebSocket is not bound by the same-origin policy: without a guard, a
page from ``http://evil.example`` could open ``ws://127.0.0.1:8000/ws`` and read the screen, and any
local user could too. So:

- every route but the static client files lives under ``/<token>/``, an unguessable token made per
  ``serve`` and printed only to its terminal (a wrong or missing token is a 404 that says nothing of
  the trace);
- ``Host`` must name the server itself (``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT`` or
  the ``--public-url`` host), which stops DNS rebinding;
- an ``Origin``, when a browser sends one (it always does on a WebSocket), must be the server's own.

This module imports textual-serve and aiohttp; ``fpdebug serve`` imports it only when it serves.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.server import Server

__all__ = ["GuardedServer", "allowed_hosts", "new_token"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """An unguessable path segment (192 random bits, URL-safe)."""
    return secrets.token_urlsafe(24)


def allowed_hosts(host: str, port: int, public_url: str) -> frozenset[str]:
    """The ``Host`` header values that name this server: its address, loopback names, the public URL."""
    names = {host.strip("[]").lower(), "127.0.0.1", "localhost", "::1"}
    public = urlsplit(public_url)
    hosts = {f"[{name}]:{port}" if ":" in name else f"{name}:{port}" for name in names}
    if public.netloc:
        hosts.add(public.netloc.lower())
    return frozenset(hosts)


class GuardedServer(Server):
    """A textual-serve :class:`~textual_serve.server.Server` behind a token path and Host/Origin checks."""

    def __init__(
        self, command: str, *, token: str, host: str, port: int, title: str, public_url: str
    ) -> None:
        super().__init__(command, host=host, port=port, title=title, public_url=public_url)
        self.token = token
        self.hosts = allowed_hosts(self.host, self.port, self.public_url)
        public = urlsplit(self.public_url)
        self.origins = frozenset(
            {f"{public.scheme}://{public.netloc}".lower()} | {f"http://{host}" for host in self.hosts}
        )

    @property
    def url(self) -> str:
        """The page to open: the public URL under the secret path."""
        return f"{self.public_url.rstrip('/')}/{self.token}/"

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        secret = f"/{self.token}"
        app.add_routes(
            [
                web.get(f"{secret}/", self.handle_index, name="index"),
                web.get(f"{secret}/ws", self.handle_websocket, name="websocket"),
                web.get(secret + "/download/{key}", self.handle_download, name="download"),
                # The client's JavaScript and fonts: the same for everyone, nothing of the trace.
                web.static("/static", self.statics_path, name="static"),
            ]
        )
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.host.lower() not in self.hosts:
            return web.Response(status=403, text="fpdebug serve: this Host is not the server's own\n")
        origin = request.headers.get("Origin")
        if origin is not None and origin.lower() not in self.origins:
            return web.Response(status=403, text="fpdebug serve: requests from other origins are refused\n")
        if not request.path.startswith("/static/") and not self._has_token(request.path):
            return web.Response(status=404, text="fpdebug serve: open the URL `fpdebug serve` printed\n")
        return await handler(request)

    def _has_token(self, path: str) -> bool:
        segment = path.split("/", 2)[1] if path.count("/") >= 2 else ""
        return hmac.compare_digest(segment.encode(), self.token.encode())

    async def on_startup(self, app: web.Application) -> None:
        # textual-serve prints its public URL without the token; say the one that works.
        self.console.print(f"fpdebug serve: open {self.url}", highlight=False, markup=False, soft_wrap=True)
        self.console.print("Only that URL opens the debugger. Press Ctrl+C to quit.", markup=False)
