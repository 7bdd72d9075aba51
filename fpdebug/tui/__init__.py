"""The Textual debugger. The only package of fpdebug that imports Textual.

- :mod:`~fpdebug.tui.app`: :class:`FpdebugApp`, :class:`TraceSource`, :class:`RunController`.
- The data behind the views is headless and lives in :mod:`fpdebug.views` (:class:`TraceSession`,
  the pass diff, row facts, the query language): the TUI draws it, export and report may read it.
- :mod:`~fpdebug.tui.screens` and :mod:`~fpdebug.tui.widgets`: the trace screen and its views.
- :mod:`~fpdebug.tui.commands`: the command palette provider; :mod:`~fpdebug.tui.keymap`: remapping.

Import :mod:`fpdebug.tui.app` for the app; this package module imports nothing heavy.
"""
