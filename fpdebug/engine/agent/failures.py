"""How a run's failure is recorded: an exception as ``ErrorInfo``, and the internal signal that the provider failed."""

from __future__ import annotations

from fpdebug.errors import ProviderError
from fpdebug.trace.records import well_formed_text
from fpdebug.trace.schema import ErrorInfo


def error_info(exc: BaseException) -> ErrorInfo:
    """An exception as the trace records it (a ``ProviderError`` keeps its status, not its prefix)."""
    # Exception text may hold a lone surrogate (a surrogateescape file name): repaired here, so the
    # model reads what the trace records (see fpdebug.trace.records.well_formed_text).
    if isinstance(exc, ProviderError):
        return ErrorInfo(type=type(exc).__name__, message=well_formed_text(exc.message), status=exc.status)
    return ErrorInfo(type=type(exc).__name__, message=well_formed_text(str(exc) or type(exc).__name__))


class RunFailed(Exception):
    """Internal: the provider failed; its llm_call is recorded, run_end is due."""

    def __init__(self, error: ErrorInfo, cause: BaseException) -> None:
        super().__init__(error.message)
        self.error = error
        self.cause = cause
