"""``fpdebug import SRC [SRC ...] -o OUT``: other programs' recordings as one fpdebug trace.

The format is told by content (see :mod:`fpdebug.ingest.detect`): OTLP traces and logs (JSON,
protobuf, JSON Lines) or an agentfootprint recording. ``OUT`` is written whole or not at all.
"""

from __future__ import annotations

import argparse
import sys
import time

HELP = "Import OTLP (JSON, protobuf, JSON Lines; traces and logs) or agentfootprint recordings as a trace."

PROGRESS_MIN_BYTES = 8 << 20
"""Sources smaller than this import without a progress bar."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``SRC…``, ``-o`` and ``--progress``/``--no-progress``."""
    parser.add_argument(
        "sources", nargs="+", metavar="SRC", help="the files to import (format told by content)"
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the trace to write (*.fptrace.jsonl, created 0600)",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on stderr (default: for sources over 8 MB when stderr is a terminal)",
    )
    parser.epilog = (
        "Several OTLP files (e.g. traces and the logs holding their message content) become one trace; "
        "an agentfootprint recording is imported alone. Exit codes: 0 imported, 2 a source could not be "
        "read or is not a format fpdebug imports (nothing is written)."
    )


class ProgressBar:
    """A one-line bar on stderr, redrawn at most ten times a second."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._last = 0.0
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` bytes."""
        now = time.monotonic()
        if now - self._last < 0.1 and done < total:
            return
        self._last = now
        fraction = done / total if total else 1.0
        width = 30
        filled = int(width * fraction)
        sys.stderr.write(
            f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {fraction:4.0%} "
            f"{done / 1e6:.1f}/{total / 1e6:.1f} MB"
        )
        sys.stderr.flush()
        self._shown = True

    def close(self) -> None:
        """End the bar's line."""
        if self._shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    """Import the sources into ``--output``.

    Raises:
        FpdebugError: A source is missing, unreadable or not importable (exit 2; nothing written).
    """
    import os
    from pathlib import Path

    from fpdebug.commands import terminal_text
    from fpdebug.errors import FpdebugError
    from fpdebug.ingest.detect import import_sources

    sources = [Path(source) for source in args.sources]
    out = Path(args.output)
    for source in sources:
        if not source.is_file():
            raise FpdebugError(f"{terminal_text(str(source))}: no such file")
        if out.exists() and os.path.samefile(source, out):
            raise FpdebugError(f"refusing to overwrite a source with the import: {terminal_text(str(out))}")
    total = sum(source.stat().st_size for source in sources)
    show = (
        args.progress if args.progress is not None else (total >= PROGRESS_MIN_BYTES and sys.stderr.isatty())
    )
    bar = ProgressBar("importing") if show else None
    try:
        kind, summary = import_sources(sources, out, progress=bar)
    except OSError as error:
        raise FpdebugError(f"cannot import: {terminal_text(str(error))}") from error
    finally:
        if bar is not None:
            bar.close()
    print(f"{terminal_text(str(out))}: imported from {kind}: {terminal_text(summary)}")
    return 0
