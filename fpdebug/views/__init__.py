"""Headless view models: the data behind the debugger's views, with no Textual.

- :mod:`~fpdebug.views.session`: :class:`TraceSession`, one open trace (reader, model, rows,
  loading steps, matchers).
- :mod:`~fpdebug.views.facts`: cheap per-iteration row facts peeked from raw lines.
- :mod:`~fpdebug.views.query`: the search and filter language.
- :mod:`~fpdebug.views.pass_diff`: the difference between two passes, and why each piece of context
  entered or left.

The TUI draws them; export and report may read them too. This layer imports trace, engine and
backtrack only, never Textual, ``fpdebug.tui``, export, commands or the CLI.
"""
