"""IterationDocument: a document about the selected iteration, rebuilt only when what it shows changed."""

from __future__ import annotations

from collections.abc import Hashable

from fpdebug.trace.model import Iteration
from fpdebug.tui.widgets.document import Block, DocBuilder, DocumentView
from fpdebug.views.session import TraceSession

__all__ = ["IterationDocument"]


class IterationDocument(DocumentView):
    """A document about one timeline row (the pass inspector, the call view, the skill map).

    Subclasses write the document in :meth:`document`; the screen calls :meth:`show` with the
    selected row whenever the selection or the trace may have changed.

    Args:
        session: The trace.
    """

    def __init__(self, session: TraceSession, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session = session
        """The trace."""
        self.row: int | None = None
        """The timeline row shown."""
        self._shown: Hashable = None

    def version(self, row: int | None) -> Hashable:
        """What the document of ``row`` depends on: the row and how many records it has so far."""
        return None if row is None else (row, len(self.session.iterations[row]))

    def show(self, row: int | None, *, force: bool = False) -> None:
        """Show timeline row ``row`` (rebuilt only when its :meth:`version` changed, or ``force``)."""
        version = self.version(row)
        if version == self._shown and not force:
            return
        same_row = self.row == row
        self.row = row
        self._shown = version
        self.rebuild(keep_scroll=same_row)

    def build(self) -> list[Block]:
        if self.row is None or self.row >= len(self.session.iterations):
            doc = DocBuilder(self.palette)
            doc.line(("No iteration selected yet.", self.palette.dim))
            return doc.blocks
        return self.document(self.session.iterations[self.row])

    def document(self, iteration: Iteration) -> list[Block]:
        """The blocks that explain ``iteration``: each view (inspector, calls, skill map) writes its own.

        Not an ``abc.abstractmethod``: a Textual widget's metaclass cannot be combined with
        ``ABCMeta``, so a subclass that forgets it fails here, on first use, with the class named.
        """
        raise TypeError(f"{type(self).__name__} must define document(iteration)")
