"""The agent engine: context declared as data, one Evaluate pass per ReAct iteration.

Knows nothing of files or UI; it emits events to an :class:`~fpdebug.engine.sink.EventSink`.
Never imports Textual; only the two live provider modules import a model SDK.
"""
