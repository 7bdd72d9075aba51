"""RowFilters: the ``/`` search of the trace screen, one filter per list, scanned in worker threads.

A filter is a :class:`~fpdebug.views.query.Query` over one list (the timeline, the lease Gantt or the
event list). Its rows are found by a worker of the screen in batches; each batch posts
:class:`~fpdebug.tui.messages.FilterGrew` so the list shows matches as they are found.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.screen import Screen
from textual.worker import get_current_worker

from fpdebug.tui.messages import FilterGrew
from fpdebug.tui.widgets.leases import LeaseGantt
from fpdebug.tui.widgets.row_list import RowFilter, RowList
from fpdebug.tui.widgets.timeline import IterationTimeline
from fpdebug.views.query import Query
from fpdebug.views.session import TraceSession

__all__ = ["RowFilters"]

_FILTER_BATCH = 2_000


class RowFilters:
    """The filters of one screen's lists, and the text each was typed as.

    Args:
        screen: The screen whose workers scan and which receives the notices.
        session: The trace.
    """

    def __init__(self, screen: Screen[None], session: TraceSession) -> None:
        self._screen = screen
        self._session = session
        self._generation = 0
        self._texts: dict[str, str] = {}

    def text_of(self, target: RowList) -> str:
        """What the filter of ``target`` was typed as (empty without one)."""
        return self._texts.get(target.id or "", "")

    def apply(self, target: RowList, text: str) -> None:
        """Filter ``target`` with the query ``text`` (an empty query shows every row)."""
        query = Query.parse(text)
        self._texts[target.id or ""] = text
        if query.empty:
            self.clear(target)
            return
        self._generation += 1
        row_filter = RowFilter(query, self._generation)
        target.set_filter(row_filter)
        self.scan(target, row_filter)

    def clear(self, target: RowList) -> None:
        """Show every row of ``target`` again."""
        self._screen.workers.cancel_group(self._screen, f"filter-{target.id}")
        self._texts.pop(target.id or "", None)
        if target.row_filter is not None:
            target.set_filter(None)

    def scan(self, target: RowList, row_filter: RowFilter) -> None:
        """Find the matches of ``row_filter`` in ``target`` from where its scan stopped, in a worker."""
        session = self._session
        if isinstance(target, IterationTimeline):
            count: Callable[[], int] = lambda: len(session.iterations)
            matches: Callable[[int, Query], bool] = session.iteration_matches
        elif isinstance(target, LeaseGantt):
            count, matches = (lambda: len(session.leases)), session.lease_matches
        else:
            count, matches = (lambda: session.lines), session.line_matches
        target_id = target.id or ""
        post = self._screen.post_message

        def scan() -> None:
            worker = get_current_worker()
            query, rows = row_filter.query, row_filter.rows
            while not worker.is_cancelled:
                total = count()
                if row_filter.scanned >= total:
                    break
                end = min(total, row_filter.scanned + _FILTER_BATCH)
                for row in range(row_filter.scanned, end):
                    if matches(row, query):
                        rows.append(row)
                row_filter.scanned = end
                post(FilterGrew(target_id, row_filter.generation))
            row_filter.done = not worker.is_cancelled
            post(FilterGrew(target_id, row_filter.generation))

        row_filter.done = False
        self._screen.run_worker(
            scan, thread=True, exclusive=True, group=f"filter-{target_id}", exit_on_error=False
        )
