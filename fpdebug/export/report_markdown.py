"""The run report as Markdown, to paste into an issue.

:func:`render_markdown` turns the plain data of :func:`fpdebug.export.report.build_report` into
Markdown: per run a header table and one section per concern, then the saved backtracks. Every
string that came from the trace or the sidecar goes through :func:`md_cell` (made inert and
Markdown-escaped) before it reaches the page.
"""

from __future__ import annotations

from collections.abc import Callable

from fpdebug.backtrack.sidecar import SIDECAR_SUFFIX
from fpdebug.export.report import LeaseRow, RunReport, SavedBacktrackRow, TimelineRow, TraceReport, where_of
from fpdebug.trace.inert import inert_line

__all__ = ["markdown_head", "markdown_run", "markdown_tail", "md_cell", "render_markdown"]

_MD_SPECIAL = "\\`*_[]<>|~"
_where = where_of


def md_cell(value: object) -> str:
    """Untrusted text as one Markdown table cell: inert (controls and bidi made visible, newlines
    folded) and with Markdown's active characters (``|``, backticks, emphasis, brackets, ``<>``) escaped."""
    if value is None:
        return "–"
    text = inert_line(str(value))
    return "".join(f"\\{ch}" if ch in _MD_SPECIAL else ch for ch in text) or "–"


def _ids(values: list[str]) -> str:
    return ", ".join(md_cell(value) for value in values) if values else "–"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _cursor(row: TimelineRow) -> str:
    start, end, by = row["cursor_from"], row["cursor_to"], row["cursor_by"]
    if by is None and end is None:
        return "–"
    if start == end or start is None:
        place = md_cell(end) if start == end else f"→ {md_cell(end)}"
    else:
        place = f"{md_cell(start)} → {md_cell(end)}"
    return f"{place} ({md_cell(by)})" if by else place


def _lease_end(row: LeaseRow) -> str:
    if row["state"] == "alive":
        return "alive at the end"
    where = _where(row["pruned_turn"], row["pruned_iteration"])
    tenant = f", tenant {md_cell(row['prune_tenant'])}" if row["prune_tenant"] else ""
    return f"{md_cell(row['state'])} at {where} ({md_cell(row['prune_site'])}{tenant})"


def _run_markdown(run: RunReport, *, several: bool) -> list[str]:
    level = "###" if several else "##"
    out: list[str] = [f"## Run {md_cell(run['run_id'])}", ""] if several else []
    out += _header_markdown(run)
    for title, section in _RUN_SECTIONS:
        out += [f"{level} {title}", "", *section(run), ""]
    return out


def _header_markdown(run: RunReport) -> list[str]:
    out = _table(
        [
            "run",
            "agent",
            "provider",
            "model",
            "status",
            "turns",
            "iterations",
            "LLM calls",
            "tool calls",
            "tokens in",
            "tokens out",
            "cost",
        ],
        [
            [
                md_cell(run["run_id"]),
                md_cell(run["agent"]),
                md_cell(run["provider"]),
                md_cell(run["model"]),
                md_cell(run["status"]),
                str(run["turns"]),
                str(run["iterations"]),
                str(run["llm_calls"]),
                str(run["tool_calls"]),
                str(run["input_tokens"]),
                str(run["output_tokens"]),
                md_cell(str(run["cost"]["text"])),
            ]
        ],
    )
    out.append("")
    if run["started"]:
        out.append(
            f"Started {md_cell(run['started'])}"
            + (f", ended {md_cell(run['ended'])}." if run["ended"] else ", not ended (no run\\_end record).")
        )
    if run["error"]:
        out.append(f"Error: {md_cell(run['error'])}")
    out += [f"Stopped early: {md_cell(stopped)}" for stopped in run["stopped_early"]]
    out.append("")
    return out


def _timeline_markdown(run: RunReport) -> list[str]:
    if not run["timeline"]:
        return ["_No iterations._"]
    return _table(
        [
            "turn.iter",
            "cursor",
            "active",
            "leases served",
            "tool calls",
            "route",
            "tokens in/out",
            "cost",
            "badges",
        ],
        [
            [
                _where(row["turn"], row["iteration"]),
                _cursor(row),
                "–" if row["active_count"] is None else str(row["active_count"]),
                _ids(row["leases_served"]),
                _ids([name + (" ✗" if name in row["failed_tools"] else "") for name in row["tool_calls"]]),
                md_cell(row["route"]),
                f"{row['input_tokens']}/{row['output_tokens']}",
                md_cell(row["cost"]) if row["cost"] is not None else "–",
                _ids(row["badges"]),
            ]
            for row in run["timeline"]
        ],
    )


def _injection_costs_markdown(run: RunReport) -> list[str]:
    if not run["injection_costs"]:
        return ["_No injection rode a call._"]
    note = (
        "Each injection's share of every prompt it rode, by its segments' share of the request's "
        "characters (an estimate, no tokenizer), summed over the run."
    )
    table = _table(
        ["injection", "calls", "≈ input tokens", "cost"],
        [
            [md_cell(row["injection_id"]), str(row["calls"]), str(row["tokens"]), md_cell(row["cost"])]
            for row in run["injection_costs"]
        ],
    )
    return [note, "", *table]


def _leases_markdown(run: RunReport) -> list[str]:
    if not run["leases"]:
        return ["_No leases._"]
    return _table(
        ["instruction", "lease", "tenant", "granted by", "at", "served", "ended"],
        [
            [
                md_cell(row["instruction_id"]),
                md_cell(row["delivery_lease"]),
                md_cell(row["tenant"]),
                md_cell(row["granted_by_tool"])
                + (f" ({md_cell(row['granted_by_call'])})" if row["granted_by_call"] else ""),
                _where(row["granted_turn"], row["granted_iteration"]),
                _ids(row["served"]),
                _lease_end(row),
            ]
            for row in run["leases"]
        ],
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _maps_markdown(run: RunReport) -> list[str]:
    if not run["maps"]:
        return ["_No mounted maps._"]
    totals = "; ".join(
        f"{md_cell(m['map_id'])}: {_plural(m['parks'], 'park')}, "
        f"{_plural(m['reengagements'], 're-engagement')}, "
        f"{md_cell(m['standing'])} at the end"
        for m in run["maps"]
    )
    return [
        totals + ".",
        "",
        *_table(
            ["map", "turn.iter", "change", "standing", "by", "idle", "at"],
            [
                [
                    md_cell(row["map_id"]),
                    _where(row["turn"], row["iteration"]),
                    md_cell(row["change"]),
                    md_cell(row["standing"]),
                    md_cell(row["by"]),
                    str(row["idle"]),
                    md_cell(row["at"]),
                ]
                for row in run["map_changes"]
            ],
        ),
    ]


def _conflicts_markdown(run: RunReport) -> list[str]:
    if not run["route_conflicts"]:
        return ["_None._"]
    return _table(
        ["turn.iter", "from", "winner", "losers", "source"],
        [
            [
                _where(row["turn"], row["iteration"]),
                md_cell(row["from_skill"]),
                md_cell(row["winner"]),
                _ids(row["losers"]),
                md_cell(row["source"]),
            ]
            for row in run["route_conflicts"]
        ],
    )


def _rejected_markdown(run: RunReport) -> list[str]:
    if not run["rejected_picks"]:
        return ["_None._"]
    return _table(
        ["turn.iter", "requested", "cursor", "allowed", "call"],
        [
            [
                _where(row["turn"], row["iteration"]),
                md_cell(row["requested"]),
                md_cell(row["current"]),
                _ids(row["allowed"]),
                md_cell(row["tool_call_id"]),
            ]
            for row in run["rejected_picks"]
        ],
    )


def _superseded_markdown(run: RunReport) -> list[str]:
    if not run["superseded_reroutes"]:
        return ["_None._"]
    return _table(
        ["turn.iter", "volunteered", "won", "from", "source"],
        [
            [
                _where(row["turn"], row["iteration"]),
                md_cell(row["volunteered"]),
                md_cell(row["won"]),
                md_cell(row["from_skill"]),
                md_cell(row["source"]),
            ]
            for row in run["superseded_reroutes"]
        ],
    )


def _unsupported_markdown(run: RunReport) -> list[str]:
    if run["unsupported_values"]:
        out = _table(
            ["turn.iter", "values stated", "unsupported", "unsupported values"],
            [
                [
                    _where(row["turn"], row["iteration"]),
                    str(row["stated"]),
                    str(row["unsupported"]),
                    _ids(row["values"]),
                ]
                for row in run["unsupported_values"]
            ],
        )
    elif run["answer_layer"]:
        out = ["_The answer layer is armed; no answer was assessed._"]
    else:
        out = ["_Not assessed: the answer layer is not armed in this run._"]
    if run["answer_layer"] and run["status"] != "completed":
        # A run stopped part-way (the debugger's gate, Ctrl-C, a failure) assessed only the answers
        # it reached: say so rather than let a short table read as "nothing unsupported".
        out += [
            "",
            f"_The run did not complete ({md_cell(run['status'])}): a turn it stopped in may have "
            "no assessment._",
        ]
    return out


_RUN_SECTIONS: tuple[tuple[str, Callable[[RunReport], list[str]]], ...] = (
    ("Timeline", _timeline_markdown),
    ("Context cost by injection", _injection_costs_markdown),
    ("Lease lifetimes", _leases_markdown),
    ("Parks and re-engagements", _maps_markdown),
    ("Route conflicts", _conflicts_markdown),
    ("Rejected picks", _rejected_markdown),
    ("Superseded reroutes", _superseded_markdown),
    ("Unsupported values", _unsupported_markdown),
)
"""A run's sections in the order the report prints them, each under its own heading."""


def _backtrack_markdown(number: int, row: SavedBacktrackRow) -> list[str]:
    where = _where(row["turn"], row["iteration"])
    call = f"llm\\_call #{row['call_index']} (seq {row['call_seq']}, turn.iter {where})"
    out = [f"### Backtrack {number}: {call}", ""]
    # Before the claim, as `fpdebug backtrack` prints them: nothing reads as the answer's explanation first.
    if row["target_note"]:
        out += [f"⚠ target: {md_cell(row['target_note'])}", ""]
    if row["trace_note"]:
        out += [f"⚠ trace: {md_cell(row['trace_note'])}", ""]
    for flag in row["flags"]:
        out += [f"⚠ {md_cell(flag['flag'])}: {md_cell(flag['note'])}", ""]
    out += [md_cell(row["claim"]), ""]
    baseline = "–"
    if row["baseline"] is not None:
        baseline = f"{md_cell(row['baseline'])} ({'stable' if row['baseline_stable'] else 'UNSTABLE'})"
    out += _table(
        ["run", "mode", "status", "baseline", "reruns"],
        [
            [
                md_cell(row["run_id"]),
                md_cell(row["mode"]),
                md_cell(row["status"]),
                baseline,
                str(row["runs_used"]),
            ]
        ],
    )
    out.append("")
    if not row["in_trace"]:
        out += [f"⚠ Run {md_cell(row['run_id'])} is not in this trace: the backtrack explains another.", ""]
    if row["rerun_provider"] is not None:
        out += [f"Reruns: {md_cell(row['rerun_provider'])}; flip test: {md_cell(row['flip_test'])}.", ""]
    if row["verdicts"]:
        out += _table(
            ["suspect", "action", "verdict", "tier", "flips", "claim"],
            [
                [
                    md_cell(v["label"]),
                    md_cell(v["action"]),
                    md_cell(v["verdict"]),
                    md_cell(v["tier"]),
                    f"{v['flips']}/{v['samples']}",
                    md_cell(v["claim"]),
                ]
                for v in row["verdicts"]
            ],
        )
    else:
        out.append(
            "_No verdicts: no probe of a suspect completed._"
            if row["baseline"] is not None
            else "_No verdicts: no reruns (chains and rankings only)._"
        )
    out.append("")
    bisect = row["bisect"]
    if bisect is not None:
        # A set is removed together to flip the answer: {a, b} · {c}.
        sets = (
            " · ".join(
                "{" + ", ".join(md_cell(label) for label in group) + "}" for group in bisect["culprits"]
            )
            or "none"
        )
        out += _table(
            ["bisect", "tier", "culprit sets", "probes", "reruns", "reason"],
            [
                [
                    md_cell(bisect["verdict"]),
                    md_cell(bisect["tier"]),
                    sets,
                    str(bisect["probes"]),
                    str(bisect["runs_used"]),
                    md_cell(bisect["reason"]),
                ]
            ],
        )
        out.append("")
    return out


def render_markdown(report: TraceReport) -> str:
    """The report as Markdown (every trace string inert and escaped; see :func:`md_cell`)."""
    runs = report["runs"]
    out = markdown_head(report, has_runs=bool(runs))
    for run in runs:
        out += _run_markdown(run, several=len(runs) > 1)
    out += markdown_tail(report)
    return "\n".join(out)


def markdown_run(run: RunReport, *, several: bool) -> list[str]:
    """One run's lines of :func:`render_markdown` (``several``: the trace holds more than one run)."""
    return _run_markdown(run, several=several)


def markdown_head(report: TraceReport, *, has_runs: bool) -> list[str]:
    """The lines of :func:`render_markdown` before the runs: the title and the trace's notes."""
    out = [f"# fpdebug report: {md_cell(report['trace'])}", ""]
    notes = f"Schema version {report['schema_version']}, written by {md_cell(report['producer'])}."
    bad = report["invalid_lines"] + report["opaque_lines"]
    if bad:
        notes += f" {bad} line(s) could not be read as known records (`fpdebug validate` lists them)."
    torn = report["torn_tail"]
    if torn is not None:
        notes += (
            f" The trace ends in a torn record at line {torn['line']} ({torn['bytes']} bytes after the "
            "last newline: a writer stopped mid-record); it was not read."
        )
    out += [notes, ""]
    if not has_runs:
        out += ["_The trace holds no run._", ""]
    return out


def markdown_tail(report: TraceReport) -> list[str]:
    """The lines of :func:`render_markdown` after the runs: the backtrack verdicts."""
    backtrack = report["backtrack"]
    out = ["## Backtrack verdicts", ""]
    if backtrack is None:
        beside = md_cell(report["trace"] + SIDECAR_SUFFIX)
        out += [f"_No backtrack sidecar ({beside}) beside the trace._", ""]
    else:
        count = len(backtrack["backtracks"])
        out += [f"From {md_cell(backtrack['path'])}: {count} saved backtrack{'s' if count != 1 else ''}.", ""]
        if backtrack["unreadable_lines"]:
            out += [
                f"{backtrack['unreadable_lines']} line(s) of the sidecar are not backtrack records and "
                "were skipped.",
                "",
            ]
        if backtrack["torn_tail"]:
            out += ["The sidecar ends in half a record (a writer stopped mid-line); it was skipped.", ""]
        for number, row in enumerate(backtrack["backtracks"], start=1):
            out += _backtrack_markdown(number, row)
    return out
