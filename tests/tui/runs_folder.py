"""A folder of runs for the runs table and run diff screens: a demo pair that diverges, and bad files.

``support.fptrace.jsonl`` is the support demo; ``without-tone.fptrace.jsonl`` the same demo with its
``tone`` steering left out (the pair the CLI's diff tests compare); ``running.fptrace.jsonl`` the
demo cut before its ``run_end`` (a trace still being written); ``hostile.fptrace.jsonl`` a trace
full of markup and control sequences; ``otel.json`` a foreign recording; ``broken.fptrace.jsonl``
a header that does not parse.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.tui.traces import write_hostile
from tests.views.run_diff_helpers import run, support_without_tone


def write_runs_folder(folder: Path) -> Path:
    """Fill ``folder`` (created if needed) and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    a = run("support", folder / "support.fptrace.jsonl", "run-support")
    run(support_without_tone(), folder / "without-tone.fptrace.jsonl", "run-no-tone")
    running = folder / "running.fptrace.jsonl"
    shutil.copyfile(a, running)
    lines = running.read_bytes().splitlines(keepends=True)
    running.write_bytes(b"".join(lines[:-1]))  # no run_end: still being written
    write_hostile(folder / "hostile.fptrace.jsonl", huge=2000)
    (folder / "otel.json").write_text('{"resourceSpans": []}\n', encoding="utf-8")
    (folder / "broken.fptrace.jsonl").write_text('{"kind": "trace_header", \n', encoding="utf-8")
    return folder
