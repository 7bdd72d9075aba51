"""The context ledger as text: the table ``fpdebug ledger`` prints and the debugger's Ledger view shows.

One rendering for both, so the two cannot drift: a title line, a header and one row per piece, worst
earn rate first, then what was refused, skipped or ignored. Every string from a trace is made inert.
"""

from __future__ import annotations

from fpdebug.backtrack.ledger import Ledger
from fpdebug.trace.inert import inert_line as safe

__all__ = ["ledger_lines"]


def ledger_lines(ledger: Ledger, *, kind: str | None = None) -> list[str]:
    """The table, worst first, then what was refused, skipped or ignored (every trace string made inert)."""
    rows = [row for row in ledger.rows() if kind is None or row.kind == kind]
    runs, count = ledger.runs_metered, len(rows)
    lines = [
        f"context ledger: {runs} run{'' if runs == 1 else 's'} metered, "
        f"{count} row{'' if count == 1 else 's'} (worst earn rate first)"
    ]
    if rows:
        width = min(max(len(safe(row.id)) for row in rows), 32)
        lines.append(
            f"  {'kind':<9} {'id':<{width}} {'offered':>7} {'~tokens':>8} {'used':>5} {'earn':>5} "
            f"{'runs':>5}  cost / used via / outcomes"
        )
        for row in rows:
            via = ", ".join(f"{safe(name)}×{n}" for name, n in sorted(row.used_via.items())) or "never used"
            outcomes = ", ".join(f"{safe(name)}×{n}" for name, n in sorted(row.outcomes.items()))
            tail = f"{row.cost_text()}; {via}" + (f"; {outcomes}" if outcomes else "")
            lines.append(
                f"  {row.kind:<9} {safe(row.id):<{width}} {row.offered:>7} {row.approx_tokens_spent:>8} "
                f"{row.used:>5} {row.earn_rate:>5.2f} {row.runs_seen:>5}  {tail}"
            )
    for refused in ledger.refused:
        lines.append(f"refused run {safe(refused.run_id)} in {safe(refused.trace)}: {safe(refused.reason)}")
    for skipped in ledger.skipped:
        lines.append(f"skipped {safe(skipped.path)}: {safe(skipped.reason)}")
    for warning in ledger.warnings:
        lines.append(f"warning: {safe(warning)}")
    return lines
