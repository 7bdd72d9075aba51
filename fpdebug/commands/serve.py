"""``fpdebug serve [TRACE] [--host 127.0.0.1] [--port N]``: the debugger in a browser (textual-serve)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import sys
from pathlib import Path

HELP = "Serve the debugger in a browser (textual-serve) on loopback: fpdebug view TRACE, or the demo."

DEFAULT_HOST = "127.0.0.1"
"""Where ``serve`` listens unless told otherwise: loopback only."""

DEFAULT_PORT = 8000
"""The default port."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``TRACE``, ``--host``, ``--port``, ``--allow-remote`` and ``--public-url``."""
    parser.add_argument(
        "trace",
        metavar="TRACE",
        nargs="?",
        help="the trace to open (default: each tab drives the demo, its trace in ~/.cache/fpdebug/serve)",
    )
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"the address to listen on (default {DEFAULT_HOST}; loopback unless --allow-remote)",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT})")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host (anyone who reaches it sees the trace's prompts)",
    )
    parser.add_argument(
        "--public-url",
        metavar="URL",
        help="the URL browsers use to reach the server (default http://HOST:PORT)",
    )
    parser.epilog = (
        "Each browser tab runs its own `fpdebug view TRACE` process. The server listens on loopback "
        "unless --allow-remote is given: a debugger shows prompts and tool results, so it must not "
        "be exposed by accident. Only the URL it prints opens the debugger: it holds a token made "
        "for this server, and requests from other origins or for other hosts are refused. "
        "Stop it with Ctrl-C."
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only: ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # any other name may resolve anywhere: treat it as remote


def view_command(trace: str | None, demo_dir: str | None = None) -> str:
    """The shell command textual-serve runs per browser tab (this Python, so the same installation).

    With a trace, ``fpdebug view TRACE``. Without one, the driven demo (the debugger runs it under
    its step gate, in the browser as on a terminal), started in ``demo_dir`` so that each tab's
    trace (a new ``support-TIMESTAMP.fptrace.jsonl``) and any sidecar land there, not in the
    directory the server was started from.
    """
    python = shlex.quote(sys.executable)
    if trace is not None:
        return f"{python} -m fpdebug view {shlex.quote(trace)}"
    demo = f"{python} -m fpdebug demo"
    return demo if demo_dir is None else f"cd {shlex.quote(demo_dir)} && exec {demo}"


def demo_dir() -> Path:
    """Where a bare ``serve`` keeps the demo traces of its tabs: ``$XDG_CACHE_HOME/fpdebug/serve``.

    Created private (0700), as the traces hold the demo's prompts.
    """
    from fpdebug.trace.cachedir import cache_dir

    return cache_dir("serve", create=True)


def run(args: argparse.Namespace) -> int:
    """Check the host, port and trace, then serve until interrupted."""
    from fpdebug.errors import ExportError

    if not is_loopback(args.host) and not args.allow_remote:
        raise ExportError(
            f"refusing to serve on {args.host}: not a loopback address. The debugger shows prompts and "
            "tool results; pass --allow-remote to expose it on purpose"
        )
    if not 1 <= args.port <= 65535:
        raise ExportError(f"--port must be between 1 and 65535, got {args.port}")
    trace = None
    if args.trace is not None:
        from fpdebug.trace.reader import TraceReader

        trace = os.path.abspath(args.trace)
        with TraceReader(trace, index=False):  # a clear error now, not a broken page later
            pass
    try:
        from fpdebug.commands.serve_guard import GuardedServer, new_token
    except ImportError as error:
        raise ExportError(
            f"textual-serve is not installed ({error.name}); install the extra: pip install 'fpdebug[serve]'"
        ) from error
    host = args.host.strip().strip("[]")
    url_host = f"[{host}]" if ":" in host else host
    public_url = args.public_url or f"http://{url_host}:{args.port}"
    title = f"fpdebug {os.path.basename(trace)}" if trace else "fpdebug demo"
    traces = None
    if trace is None:
        traces = str(demo_dir())
        print(f"fpdebug serve: each tab runs the demo; its trace goes to {traces}", flush=True)
    server = GuardedServer(
        view_command(trace, traces),
        token=new_token(),
        host=host,
        port=args.port,
        title=title,
        public_url=public_url,
    )
    try:
        server.serve()
    except OSError as error:  # the port is taken, the address is not ours…
        raise ExportError(f"cannot listen on {url_host}:{args.port}: {error.strerror or error}") from error
    return 0
