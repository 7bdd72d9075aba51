"""The time layer: the turn's ``clock`` row and each call's ``call-window`` row (docs/honesty.md §12.6).

Under ``.time(zone=...)`` the inputs layer files, in its ONE write, the turn's clock row (on its
first visit of the turn) and one ``call-window`` row per call to a tool whose period declares forms
(:class:`~fpdebug.trace.schema.ToolPeriod`: the arguments holding the window's start and end). The
results layer then hands :func:`~fpdebug.engine.honesty.results.time_of_batch` this turn's clock
and the batch's windows. Everything here is pure: the loop and the replay call the same functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fpdebug.engine.honesty.ledger import Finding
from fpdebug.engine.honesty.results import CallWindow, TurnClock
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import CallWindowRow, ClockRow, ToolCallRecord, ToolPeriod

__all__ = ["app_zone_of", "call_windows", "clock_row", "turn_clock", "windows_of"]


def app_zone_of(zone: object) -> str:
    """The app's zone (``time.appZone``), checked: an IANA name the system knows.

    Raises:
        DefinitionError: Not a string, or a zone the system does not know.
    """
    if not isinstance(zone, str) or not zone.strip():
        raise DefinitionError(f"time(zone=...) takes an IANA zone name such as 'Europe/Paris', got {zone!r}")
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise DefinitionError(f"time(zone=...): unknown zone {zone!r}") from exc
    return zone


def clock_row(turn: int, now: datetime, zone: str) -> ClockRow:
    """The turn's clock row: ``now`` read in the app's zone.

    Args:
        turn: The turn.
        now: The clock's reading (timezone-aware).
        zone: The app's zone.

    Returns:
        The row.
    """
    return ClockRow(turn=turn, now=now.astimezone(ZoneInfo(zone)), zone=zone)


def _instant(value: object, zone: ZoneInfo, *, end: bool) -> datetime | None:
    """A form's value as an instant: an ISO date (a whole day) or date-time; ``None`` when not one."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        if len(text) == 10:  # a date alone: the day starts at midnight; as an end, it ends at the next
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=zone)
            return start + timedelta(days=1) if end else start
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.replace(tzinfo=zone) if moment.tzinfo is None else moment


def call_windows(
    calls: Sequence[ToolCallRecord], periods: Mapping[str, ToolPeriod], app_zone: str
) -> list[CallWindowRow]:
    """One ``call-window`` row per call to a tool whose period declares forms, in call order.

    A wall time without an offset is read in the form's zone (the app's, or UTC). A call whose
    forms are missing or do not read as ISO dates or date-times, or whose window ends before it
    starts, files no window: the layer never invents one.

    Args:
        calls: The calls Route may dispatch.
        periods: Tool name → its declared period.
        app_zone: The app's zone.

    Returns:
        The rows.
    """
    rows = []
    for call in calls:
        period = periods.get(call.name)
        if period is None:
            continue
        zone_name = app_zone if period.wall_zone == "app" else "UTC"
        zone = ZoneInfo(zone_name)
        start = _instant(call.args.get(period.start), zone, end=False)
        end = _instant(call.args.get(period.end), zone, end=True)
        if start is None or end is None or end < start:
            continue
        rows.append(
            CallWindowRow(tool_call_id=call.id, tool_name=call.name, start=start, end=end, zone=zone_name)
        )
    return rows


def turn_clock(ledger: Iterable[Finding]) -> TurnClock | None:
    """The latest clock row in the ledger (whichever turn it belongs to: ``time_of_batch`` checks).

    Args:
        ledger: The findings so far, in order.

    Returns:
        The clock, or ``None`` when no row was filed.
    """
    clock = None
    for finding in ledger:
        for row in finding.rows:
            if isinstance(row, ClockRow):
                clock = TurnClock(row.turn, row.now)
    return clock


def windows_of(ledger: Iterable[Finding], turn: int) -> dict[str, CallWindow]:
    """This turn's call windows, by call id (a resumed leg may repeat an earlier turn's ids).

    Args:
        ledger: The findings so far, in order.
        turn: The turn.

    Returns:
        Call id → its window.
    """
    return {
        row.tool_call_id: CallWindow(row.tool_call_id, row.start, row.end)
        for finding in ledger
        if finding.turn == turn
        for row in finding.rows
        if isinstance(row, CallWindowRow)
    }
