"""fpdebug's one exception tree.

Every error fpdebug raises on purpose derives from :class:`FpdebugError`, so a caller (the CLI,
the TUI) can catch one class and show a clear message instead of a traceback::

    FpdebugError
    ├── TraceError              a trace file cannot be opened, locked or written
    │   ├── TraceLockedError    another writer holds the file
    │   ├── TraceWriteError     the disk refused a record (full, read-only, closed)
    │   └── TraceFormatError    the bytes are not an fpdebug trace
    │       └── TraceVersionError   the trace was written by a newer schema
    ├── DefinitionError         an agent, injection or skill map declared something invalid
    ├── ProviderError           a model provider failed (HTTP status, timeout, bad reply)
    │   ├── ScriptExhaustedError    a scripted provider ran out of replies
    │   ├── ReplayDivergenceError   a replayed request differs from the recorded one
    │   └── LiveCallRefusedError    a live model call was attempted where none was asked for
    ├── ToolError               a tool failed in a way the loop cannot turn into a result
    ├── RunInterrupted          a run was stopped from outside (the debugger's step gate, Ctrl-C)
    ├── ScenarioError           a scenario or user module cannot be loaded
    ├── ConfigError             a user configuration file (the debugger's keymap) is invalid
    ├── BacktrackError          a backtrack request cannot be answered (unknown call, suspect…)
    │   └── BacktrackCancelled  its caller cancelled a backtrack; what finished is kept
    ├── ExportError             an export cannot be made or delivered (OTLP endpoint, serve host)
    └── ImportFormatError       another program's recording cannot be imported (wrong format or version)

Outside that tree, :class:`Terminated` is a ``KeyboardInterrupt``: SIGTERM or SIGHUP ending a run is
handled exactly as Ctrl-C is (``run_end {interrupted}``), and ``except Exception`` never swallows it.
"""

from __future__ import annotations

__all__ = [
    "BacktrackCancelled",
    "BacktrackError",
    "ConfigError",
    "DefinitionError",
    "ExportError",
    "FpdebugError",
    "ImportFormatError",
    "LiveCallRefusedError",
    "OutputValidationError",
    "ProviderError",
    "ReplayDivergenceError",
    "RunInterrupted",
    "ScenarioError",
    "ScriptExhaustedError",
    "Terminated",
    "ToolError",
    "ToolMiddlewareError",
    "TraceError",
    "TraceFormatError",
    "TraceLockedError",
    "TraceVersionError",
    "TraceWriteError",
    "UnpricedCallError",
]


class FpdebugError(Exception):
    """Base of every error fpdebug raises deliberately."""


class TraceError(FpdebugError):
    """A trace file cannot be opened, locked or written."""


class TraceReplacedError(TraceError):
    """A followed trace is no longer the file that was opened: replaced (``mv``), copied over
    (``cp``) or truncated. The reader never splices the new content onto the old; open it again."""


class TraceLockedError(TraceError):
    """Another writer already holds the exclusive lock on this trace file."""


class TraceWriteError(TraceError):
    """The operating system refused to write a record (disk full, closed writer…)."""


class TraceFormatError(TraceError):
    """The file is not an fpdebug trace, or a record in it is not valid."""


class TraceVersionError(TraceFormatError):
    """The trace declares a schema version newer than this fpdebug understands."""

    def __init__(self, found: int, supported: int, *, path: str | None = None) -> None:
        where = f"{path}: " if path is not None else ""
        super().__init__(
            f"{where}trace schema_version {found} is newer than the {supported} this fpdebug reads; "
            "upgrade fpdebug to open it"
        )
        self.found = found
        self.supported = supported
        self.path = path


class DefinitionError(FpdebugError):
    """An injection, skill map or agent declaration was refused at build time."""


class ProviderError(FpdebugError):
    """A model provider failed. ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None, provider: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.provider = provider

    def __str__(self) -> str:
        prefix = f"{self.provider}: " if self.provider else ""
        status = f"HTTP {self.status}: " if self.status is not None else ""
        return f"{prefix}{status}{self.message}"


class ScriptExhaustedError(ProviderError):
    """A scripted provider received more requests than it has replies."""


class ReplayDivergenceError(ProviderError):
    """A replayed run sent a request that differs from the recorded one."""


class LiveCallRefusedError(ProviderError):
    """A live provider was reached where the user did not ask for one."""


class ToolError(FpdebugError):
    """A tool declaration or dispatch failed outside the tool's own code."""


class OutputValidationError(FpdebugError):
    """The model's final reply still failed the declared output schema after every re-ask
    (:meth:`~fpdebug.engine.agent.Agent.output_schema`): the run ends ``failed``."""


class UnpricedCallError(FpdebugError):
    """A run under a cost budget made a call nothing can price (a model the price table does not
    know, or an in-process provider) and the budget's ``unpriced`` stance is ``fail``."""


class ToolMiddlewareError(ToolError):
    """A before-tool middleware raised, or returned something other than a call or its arguments.

    The loop records it as the call's ``failure`` result (the tool does not run) and goes on.
    """


class RunInterrupted(FpdebugError):
    """A run was stopped from outside: an event sink (the debugger's step gate) raised it to end the run.

    The agent loop catches it, records ``run_end {status: interrupted}`` and returns the result.

    Args:
        message: What stopped the run.
        stored: The sink kept the event it raised on (a gate stopped while paused after writing
            it): the recorder then counts that event's ``seq`` as used, so ``run_end`` follows it.
    """

    def __init__(self, message: str = "the run was interrupted", *, stored: bool = False) -> None:
        super().__init__(message)
        self.stored = stored
        """Whether the sink kept the event it raised on."""


class ScenarioError(FpdebugError):
    """A demo scenario or a user module could not be found or loaded."""


class BacktrackError(FpdebugError):
    """A backtrack request names a call, suspect or sidecar that does not exist."""


class BacktrackCancelled(BacktrackError):
    """The caller of a backtrack cancelled it between two reruns; the verdicts that finished are kept."""


class ExportError(FpdebugError):
    """An export cannot be made or delivered: a bad OTLP endpoint, a collector that refused the spans,
    a missing optional dependency, or a ``serve`` host that is not loopback."""


class ImportFormatError(FpdebugError):
    """Another program's recording cannot be imported: it is not the format it claims, another version
    of it, or damaged (truncated JSON). Nothing is written when this is raised."""


class ConfigError(FpdebugError):
    """A user configuration file (such as the debugger's keymap) is missing or invalid."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP asked the command to end: handled as Ctrl-C is, a run records ``run_end {interrupted}``.

    ``cli.main`` exits with the conventional ``128 + signum`` (143 for SIGTERM, 129 for SIGHUP).

    Args:
        signum: The signal that arrived.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum
        """The signal that arrived."""
