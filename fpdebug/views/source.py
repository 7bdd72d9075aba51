"""What an imported trace's source did not record, in the words the views show.

An imported trace's header names its source (:class:`~fpdebug.trace.schema.ImportSource`): the
format, and the record kinds that format cannot hold (an OTLP run has no passes, cursor moves,
leases or engagement). A view whose records are absent for that reason says "not recorded by
otlp" instead of drawing an empty pane, and never invents what the source did not keep
(docs/honesty.md §12).

agentfootprint keeps no trigger definitions: the importer writes a ``rule`` trigger whose
description starts with "not recorded"; a view shows "trigger not recorded" for it, not "rule".
agentfootprint records engagement decisions but not the renewal evidence behind them: an imported
engagement record's evidence is empty because it was not recorded, not because there was none.
"""

from __future__ import annotations

from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import ImportSource, InjectionDecl

__all__ = [
    "NOT_RECORDED_PREFIX",
    "evidence_not_recorded",
    "import_source",
    "not_recorded_by",
    "short_format",
    "source_honesty",
    "trigger_not_recorded",
]

NOT_RECORDED_PREFIX = "not recorded"
"""How an importer's description of something it could not read begins."""


def import_source(reader: TraceReader) -> ImportSource | None:
    """The header's import source; ``None`` for fpdebug's own traces (or before the header arrived)."""
    if not reader.has_header:
        return None
    return reader.header.source


def short_format(source: ImportSource) -> str:
    """The format as a user names it: ``otlp``, ``agentfootprint``."""
    return "agentfootprint" if source.format.startswith("agentfootprint") else source.format


def not_recorded_by(source: ImportSource | None, kind: str) -> str | None:
    """``"not recorded by otlp"`` when the source format cannot hold ``kind`` records, else ``None``.

    Args:
        source: The trace's import source (``None``: fpdebug's own trace, which records everything).
        kind: A record kind (``pass``, ``cursor_move``, ``lease_grant``, ``engagement``…).
    """
    if source is None or kind not in source.not_recorded:
        return None
    return f"{NOT_RECORDED_PREFIX} by {short_format(source)}"


def trigger_not_recorded(decl: InjectionDecl | None) -> bool:
    """The declaration's trigger was not in the recording (the importer said so in its description)."""
    if decl is None:
        return False
    description = decl.trigger.description or ""
    return description.startswith(NOT_RECORDED_PREFIX)


def evidence_not_recorded(source: ImportSource | None) -> bool:
    """Renewal evidence is absent because the source does not keep it (agentfootprint recordings)."""
    return source is not None and source.format.startswith("agentfootprint")


def source_honesty(source: ImportSource | None) -> str | None:
    """The backtrack honesty line of an imported trace: what its chains cannot rest on.

    ``None`` for fpdebug's own traces. An imported run's provenance comes from its recorded
    segments only, so every chain stays correlational (docs/backtracking.md §9.1).
    """
    if source is None:
        return None
    name = short_format(source)
    kinds = ", ".join(source.not_recorded) or "nothing listed"
    return (
        f"imported from {name}: {kinds} {NOT_RECORDED_PREFIX} by {name}; chains rest on the recorded "
        "segments only (correlational)"
    )
