"""Messages the workers post to the UI thread. Each states a fact; most coalesce (only the newest matters).

Workers never touch widgets: they update the :class:`~fpdebug.views.session.TraceSession` (or a
:class:`~fpdebug.tui.widgets.row_list.RowFilter`) and post one of these; the handler on the UI thread
reads the session and updates the widgets.
"""

from __future__ import annotations

from textual.message import Message

__all__ = ["FilterGrew", "LoadFinished", "TraceChecked", "TraceGrew", "TraceLoading"]


class TraceLoading(Message):
    """The first load made progress (bytes indexed, lines modelled)."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, TraceLoading)


class TraceGrew(Message):
    """The session has more rows (the first load, or a poll of a followed file found new lines).

    Args:
        lines: Lines indexed by the step that posted this notice (0 for a modelling step).
    """

    def __init__(self, lines: int = 0) -> None:
        self.lines = lines
        """Lines indexed by the step that posted this notice."""
        super().__init__()

    def can_replace(self, message: Message) -> bool:
        # ``self`` is the older notice, dropped in favour of the newer ``message``: carry the count.
        if isinstance(message, TraceGrew):
            message.lines += self.lines
            return True
        return False


class LoadFinished(Message):
    """The first load is complete: every line present at open time is indexed and modelled."""


class TraceChecked(Message):
    """More lines were validated in full (:meth:`~fpdebug.views.session.TraceSession.check_step`)."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, TraceChecked)


class FilterGrew(Message):
    """A filter worker found more matches (or finished).

    Args:
        target: The id of the list the filter belongs to.
        generation: The filter's generation (a newer filter makes this notice stale).
    """

    def __init__(self, target: str, generation: int) -> None:
        self.target = target
        """The id of the filtered list."""
        self.generation = generation
        """The filter's generation."""
        super().__init__()

    def can_replace(self, message: Message) -> bool:
        return (
            isinstance(message, FilterGrew)
            and message.target == self.target
            and message.generation == self.generation
        )


class TraceReplaced(Message):
    """The followed file was replaced, copied over or truncated: following stopped (nothing spliced).

    Args:
        reason: The reader's message.
    """

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason
