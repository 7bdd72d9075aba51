"""Render a ``results.json`` of ``python -m bench`` as the Markdown tables the docs quote.

``python -m bench --markdown bench/out/results.json`` (or ``python -m bench.report_md PATH``) prints:

- a line saying what run the figures come from (full or quick, pairs, machine, load, total time);
- a headline table, one row per target of issue 22, with the worst figure over both shapes and
  every size (what README and ``docs/guide/performance.md`` quote as the status);
- the whole-file commands as one table per shape: each command's wall ratio to the orjson parse
  (the judged one), its CPU ratio and its RSS share at every size, and its linearity;
- every row of the run, one table per shape, as ``python -m bench`` printed them.

Nothing is measured here: the figures are the file's, so what is pasted is what a run measured.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["main", "render_markdown"]


def _cell(value: object) -> str:
    """A table cell: pipes escaped, so a figure's text cannot split its row."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return lines


def _label(events: int) -> str:
    if events >= 1_000_000 and events % 1_000_000 == 0:
        return f"{events // 1_000_000}M"
    if events >= 1_000 and events % 1_000 == 0:
        return f"{events // 1_000}k"
    return str(events) if events else "-"


def _met(value: object) -> str:
    return "" if value is None else ("yes" if value else "**NO**")


Row = dict[str, object]

HEADLINES: tuple[tuple[str, str, str], ...] = (
    # (row numbers, what, issue 22's target)
    ("1", "index build, cold cache", "<= 3x wc -l"),
    ("2", "first screen, cold cache", "< 0.5 s"),
    ("2b", "first screen on reopen", "< 0.3 s"),
    ("2c", "cold start to the first full screen", "< 0.5 s"),
    ("3", "jump to a random iteration", "median < 50 ms"),
    ("4", "peak RSS while viewing", "< 25 % of the file"),
    ("5", "recording, batch durability", "<= 1.15x the null sink"),
    ("5f", "bytes per iteration, 10 to 1,000 iterations", "flat (<= 1.10x)"),
    ("6", "follow latency", "median < 100 ms"),
    ("8", "whole-file commands (wall / parse, RSS)", "wall <= 3x parse, RSS <= 25 %"),
    ("8z", "whole-file commands, linearity", "marginal us/event flat within 10 %"),
)


ABSOLUTE = {"2", "2b", "2c", "3", "4b", "6"}
"""Rows whose target is a time, not a ratio: the headline quotes what they measured."""


def _matches(row: Row, numbers: str) -> bool:
    number = str(row.get("number", ""))
    if numbers == "8":
        return number.startswith("8") and number != "8z"
    return number == numbers


def _headline(rows: Sequence[Row]) -> list[str]:
    """One line per target: how many rows meet it, and the rows that do not (shape, size, ratio)."""
    out = []
    for numbers, what, target in HEADLINES:
        judged = [row for row in rows if _matches(row, numbers) and row.get("met") is not None]
        if not judged:
            continue
        failing = [row for row in judged if not row["met"]]
        where = "; ".join(
            f"{row['shape']} {_label(_size(row))}"
            + (f" {str(row['name']).strip()}" if numbers == "8" or numbers == "8z" else "")
            + f": {row['measured'] if numbers in ABSOLUTE else row['ratio'] or row['measured']}"
            for row in failing
        )
        status = "met" if not failing else f"**not met** in {len(failing)} of {len(judged)}"
        out.append((what, target, f"{len(judged) - len(failing)} of {len(judged)}", status, where or "-"))
    return _table(("figure", "target", "rows met", "status", "rows not met (shape size: figure)"), out)


def _commands(rows: Sequence[Row], shape: str) -> list[str]:
    """Command x size: wall ratio (judged), CPU ratio, RSS share; then the linearity row's figures."""
    commands = [row for row in rows if row.get("shape") == shape and _command(row)]
    if not commands:
        return []
    sizes = sorted({_size(row) for row in commands})
    names: dict[str, str] = {}
    for row in commands:
        names.setdefault(_command(row), str(row["name"]).strip())
    linear = {
        str(row["name"]).strip().removeprefix("linearity of ").split(":")[0]: row
        for row in rows
        if row.get("shape") == shape and row.get("number") == "8z"
    }
    table = []
    for command, shown in names.items():
        cells: list[object] = [f"`{shown}`"]
        for size in sizes:
            found = [r for r in commands if r.get("size") == size and _command(r) == command]
            cells.append(_command_cell(found[0]) if found else "not run")
        line = linear.get(shown)
        cells.append(f"{line['ratio'] or 'no verdict'}: {line['measured']}" if line else "-")
        table.append(cells)
    header = (
        "command",
        *(f"{_label(size)}: wall x (CPU x), RSS" for size in sizes),
        "linearity (marginal us/ev)",
    )
    return _table(header, table)


def _size(row: Row) -> int:
    size = row.get("size")
    return int(size) if isinstance(size, int | float) else 0


def _command(row: Row) -> str:
    """The command a row measured (or stopped), or ``""``."""
    raw = _raw(row)
    name = raw.get("command", raw.get("stopped_command"))
    return name if isinstance(name, str) else ""


def _raw(row: Row) -> dict[str, object]:
    raw = row.get("raw")
    return raw if isinstance(raw, dict) else {}


def _command_cell(row: Row) -> str:
    raw = _raw(row)
    if "pair_ratio_wall" not in raw:  # stopped or not run: the row says why
        return f"{row['measured']} ({_met(row.get('met')) or 'no verdict'})"
    share = float(raw["peak_mb"]) * 1024 * 1024 / (float(raw["mb"]) * 1e6)  # type: ignore[arg-type]
    mark = "" if row.get("met") else " **NO**"
    return f"{float(raw['pair_ratio_wall']):.2f}x ({float(raw['pair_ratio_cpu']):.2f}x), {share:.1%}{mark}"  # type: ignore[arg-type]


def _pairs(results: dict[str, object]) -> str:
    """``alternated pairs per figure: 3 at 10k, 2 at 100k, 1 at 1M`` (or the run's one ``repeat``)."""
    pairs = results.get("pairs")
    if isinstance(pairs, dict) and pairs:
        return "alternated pairs per figure: " + ", ".join(
            f"{count} at {_label(int(size))}"
            for size, count in sorted(pairs.items(), key=lambda item: int(item[0]))
        )
    repeat = results.get("repeat", "?")
    return f"{repeat} alternated pair{'' if repeat == 1 else 's'} per figure"


def render_markdown(results: dict[str, object]) -> str:
    """The Markdown of a ``results.json`` (a dict as :func:`bench.run.main` wrote it)."""
    figures = results.get("figures")
    rows: list[Row] = [row for row in figures if isinstance(row, dict)] if isinstance(figures, list) else []
    load = results.get("load")
    load_text = " / ".join(f"{value:.1f}" for value in load) if isinstance(load, list) else "?"
    total = results.get("total_s")
    minutes = f"{float(total) / 60:.1f} min" if isinstance(total, int | float) else "?"
    mode = "quick" if results.get("quick") else "full"
    listed = results.get("sizes")
    sizes = ", ".join(_label(int(size)) for size in listed) if isinstance(listed, list) else "?"
    out = [
        f"*{mode} run of `python -m bench`: sizes {sizes}"
        + (" and 10M" if "10m" in (results.get("steps") or []) else "")  # type: ignore[operator]
        + f", {_pairs(results)}, seed {results.get('seed', 0)}, "
        f"{results.get('machine', '?')}, load average at the end {load_text}; total wall time {minutes}.*",
        "",
        "### Targets",
        "",
        *_headline(rows),
    ]
    shapes = [shape for shape in ("synthetic", "demo") if any(row.get("shape") == shape for row in rows)]
    for shape in shapes:
        table = _commands(rows, shape)
        if table:
            out += [
                "",
                f"### Whole-file commands, {shape} shape (wall ratio judged; CPU ratio in brackets)",
                "",
            ]
            out += table
    for shape in (*shapes, "scripted", ""):
        mine = [row for row in rows if row.get("shape", "") == shape]
        if not mine:
            continue
        out += ["", f"### Every figure, {shape or 'failed steps'}", ""]
        out += _table(
            ("size", "#", "figure", "measured", "baseline (same run)", "ratio", "target", "met"),
            (
                (
                    _label(_size(row)),
                    row.get("number", ""),
                    str(row.get("name", "")).strip(),
                    row.get("measured", ""),
                    row.get("baseline", ""),
                    row.get("ratio", ""),
                    row.get("target", ""),
                    _met(row.get("met")),
                )
                for row in mine
            ),
        )
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.report_md RESULTS``: print the Markdown of a ``results.json``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.report_md", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("results", type=Path, help="a results.json written by python -m bench")
    args = parser.parse_args(argv)
    try:
        results = json.loads(args.results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        print(f"python -m bench.report_md: cannot read {args.results}: {error}", file=sys.stderr)
        return 2
    if not isinstance(results, dict) or not isinstance(results.get("figures"), list):
        print(
            f"python -m bench.report_md: {args.results} is not a results.json of python -m bench",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(render_markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
