"""A bare ``fpdebug serve`` runs the driven demo in each browser tab, its traces kept out of the cwd (issue 20).

The browser tests drive Debian's headless Chromium (``apt-get install chromium``) against a real
server and check that the screenshot shows a drawn screen; they are skipped where
``/usr/bin/chromium`` is missing, and run with ``pytest -m browser``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fpdebug.commands.run import WEB_DRIVER
from fpdebug.commands.serve import view_command
from tests.cli.test_export_report_serve import free_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
DRAWN = 1000
"""Distinct colours above which a screenshot shows the debugger: textual-serve's splash, before the
app draws, has about 540 (its logo and title, anti-aliased); the debugger's screen about 1,800."""


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    return env


def test_a_bare_serve_runs_each_tab_s_demo_in_its_own_directory() -> None:
    words = shlex.split(view_command(None, "/tmp/fp serve; x"))
    assert words == ["cd", "/tmp/fp serve; x", "&&", "exec", sys.executable, "-m", "fpdebug", "demo"]


def test_the_tab_command_of_a_bare_serve_drives_the_demo_and_leaves_the_cwd_alone(tmp_path: Path) -> None:
    cwd, traces = tmp_path / "cwd", tmp_path / "traces"
    cwd.mkdir()
    traces.mkdir()
    # As textual-serve starts it: a shell, pipes for stdin/stdout/stderr, its web driver named.
    env = _env(TEXTUAL_DRIVER=WEB_DRIVER, COLUMNS="100", ROWS="30")
    tab = subprocess.Popen(
        view_command(None, str(traces)),
        shell=True,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and tab.poll() is None and not list(traces.iterdir()):
            time.sleep(0.2)
        time.sleep(2)  # the debugger draws while the run waits behind its step gate
        assert tab.poll() is None, "the demo ended instead of waiting in the debugger"
    finally:
        tab.terminate()
        out, err = tab.communicate(timeout=30)
    assert b"not a terminal" not in err, err.decode(errors="replace")
    assert len(out) > 1000  # the web driver's packets: the screen went to the browser side
    written = [path.name for path in traces.iterdir()]
    assert len(written) == 1 and re.fullmatch(r"support-\d{8}T\d{6}Z\.fptrace\.jsonl", written[0])
    assert list(cwd.iterdir()) == []


# ----------------------------------------------------------------------------------------------
# In a real browser


def png_colours(png: bytes) -> int:
    """How many distinct colours an 8-bit RGB or RGBA PNG holds (a blank page has one or two)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, header = 8, b"", b""
    while at < len(png):
        size = int.from_bytes(png[at : at + 4], "big")
        chunk, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + size]
        header = body if chunk == b"IHDR" else header
        idat += body if chunk == b"IDAT" else b""
        at += 12 + size
    width, height = int.from_bytes(header[:4], "big"), int.from_bytes(header[4:8], "big")
    depth, colour = header[8], header[9]
    assert depth == 8 and colour in (2, 6), (depth, colour)
    pixel = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * pixel
    previous, colours = bytearray(stride), set[int]()
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        previous = _unfiltered(kind, row, previous, pixel)
        # Each pixel's red, green and blue as one 4-byte integer (alpha left out), counted in C.
        wide = bytearray(4 * width)
        for channel in range(3):
            wide[channel::4] = previous[channel::pixel]
        colours.update(memoryview(wide).cast("I"))
    return len(colours)


def _unfiltered(kind: int, row: bytearray, previous: bytearray, pixel: int) -> bytearray:
    """``row`` with PNG filter ``kind`` undone against the row above (PNG spec §9), in place.

    A screenshot is about a million bytes: "none" and "up" (most rows) are done on whole rows at
    once, the other filters byte by byte with as little work per byte as the spec allows.
    """
    stride = len(row)
    if kind == 2:  # up: a bytewise sum mod 256, as one integer sum without carries between bytes
        low = int.from_bytes(b"\x7f" * stride, "little")
        a, b = int.from_bytes(row, "little"), int.from_bytes(previous, "little")
        return bytearray((((a & low) + (b & low)) ^ ((a ^ b) & ~low)).to_bytes(stride + 1, "little")[:stride])
    if kind == 1:  # sub
        for x in range(pixel, stride):
            row[x] = (row[x] + row[x - pixel]) & 255
    elif kind == 3:  # average
        for x in range(stride):
            row[x] = (row[x] + ((row[x - pixel] if x >= pixel else 0) + previous[x]) // 2) & 255
    elif kind == 4:  # Paeth: the first pixel has no left or corner neighbour, so its predictor is up
        for x in range(pixel):
            row[x] = (row[x] + previous[x]) & 255
        for x in range(pixel, stride):
            left, up, corner = row[x - pixel], previous[x], previous[x - pixel]
            guess = left + up - corner
            to_left, to_up, to_corner = abs(guess - left), abs(guess - up), abs(guess - corner)
            if to_left <= to_up and to_left <= to_corner:
                row[x] = (row[x] + left) & 255
            elif to_up <= to_corner:
                row[x] = (row[x] + up) & 255
            else:
                row[x] = (row[x] + corner) & 255
    return row


@contextmanager
def serving(args: list[str], cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """``fpdebug serve ARGS`` on a free port; the URL it printed."""
    log_path = cwd / "serve.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "fpdebug", "serve", *args, "--port", str(free_port())],
            cwd=cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline, url = time.monotonic() + 90, None
            while time.monotonic() < deadline and server.poll() is None and url is None:
                found = re.search(r"open (http://\S+/)\n", log_path.read_text(errors="replace"))
                url = found.group(1) if found else None
                time.sleep(0.2)
            assert url is not None, log_path.read_text(errors="replace")
            yield url
        finally:
            server.terminate()
            server.wait(timeout=30)


async def _drawn_screenshot(url: str, debugging_port: int, *, timeout: float) -> bytes:
    """Load ``url`` in the running Chromium (DevTools protocol) and screenshot it once the app drew.

    ``--screenshot`` alone shoots before the tab's app process has drawn anything (it takes
    seconds to start): here the page runs in real time until the app's screen arrived.
    """
    import aiohttp  # textual-serve's own dependency

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as http:
        while True:
            try:
                async with http.get(f"http://127.0.0.1:{debugging_port}/json/list") as response:
                    pages = await response.json()
                break
            except aiohttp.ClientError:
                assert time.monotonic() < deadline, "chromium did not start"
                await asyncio.sleep(0.5)
        target = next(page["webSocketDebuggerUrl"] for page in pages if page["type"] == "page")
        async with http.ws_connect(target, max_msg_size=0) as devtools:
            ids = iter(range(1, 1_000_000))

            async def call(method: str, **params: object) -> dict[str, object]:
                number = next(ids)
                await devtools.send_json({"id": number, "method": method, "params": params})
                while True:
                    reply = json.loads((await devtools.receive()).data)
                    if reply.get("id") == number:
                        return dict(reply.get("result", {}))

            await call("Page.navigate", url=url)
            # The client marks the page once the app's first bytes arrive; then give it a moment
            # to draw the whole screen.
            arrived = "document.body !== null && document.body.classList.contains('-first-byte')"
            while time.monotonic() < deadline:
                result = await call("Runtime.evaluate", expression=arrived)
                if dict(result.get("result", {})).get("value") is True:  # type: ignore[call-overload]
                    break
                await asyncio.sleep(0.5)
            await asyncio.sleep(4)
            return base64.b64decode(str((await call("Page.captureScreenshot", format="png"))["data"]))


def screenshot(url: str, out: Path, *, timeout: float = 120) -> bytes:
    """Headless Chromium's screenshot of ``url`` once the app's screen arrived (or at ``timeout``)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as profile:
        chromium = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--window-size=1280,800",
                f"--remote-debugging-port={port}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            png = asyncio.run(_drawn_screenshot(url, port, timeout=timeout))
        finally:
            chromium.terminate()
            chromium.wait(timeout=30)
    out.write_bytes(png)  # kept in the test's tmp_path, to look at
    return png


browser = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"
)


@pytest.mark.browser
@pytest.mark.slow
@browser
@pytest.mark.parametrize("bare", [False, True], ids=["trace", "bare"])
def test_serve_draws_the_debugger_in_a_real_browser(bare: bool, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = _env(XDG_CACHE_HOME=str(cache))
    args = [] if bare else [str(ROOT / "sample_traces" / "support.fptrace.jsonl")]
    with serving(args, tmp_path, env) as url:
        png = screenshot(url, tmp_path / "screen.png")
    colours = png_colours(png)
    assert colours > DRAWN, f"{colours} colours: the debugger was not drawn"
    if bare:  # the demo's trace went to the cache directory, not the cwd
        assert list((cache / "fpdebug" / "serve").glob("support-*.fptrace.jsonl"))
        assert not list(tmp_path.glob("*.fptrace.jsonl"))
