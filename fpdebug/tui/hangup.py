"""A terminal driver that survives its terminal: writes after a hang-up are dropped, never queued forever.

Textual's Linux driver writes the screen from a background thread through a bounded queue. When the
terminal is closed (a tmux pane killed, an ssh connection dropped), the first write fails with
``EIO``, the exception ends that thread, and the queue is never emptied again: after about thirty
more writes the next one blocks the app's event loop for good. The app then never reaches its
shutdown, so SIGTERM is ignored and only SIGKILL ends the process (issue 18, item 10).

:func:`hang_up_safe` gives that thread a file whose ``write`` and ``flush`` swallow
``OSError``: once the terminal is gone its output goes nowhere, as the terminal it was for, and the
app shuts down as it would with a terminal.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App
    from textual.driver import Driver

__all__ = ["TerminalOutput", "hang_up_safe"]


def hang_up_safe(driver: type[Driver]) -> type[Driver]:
    """The hang-up-safe driver in place of Textual's Linux driver; any other driver unchanged."""
    if sys.platform == "win32":
        return driver
    from textual.drivers.linux_driver import LinuxDriver

    if driver is not LinuxDriver:
        return driver

    class HangUpSafeLinuxDriver(LinuxDriver):
        """Textual's Linux driver writing through a :class:`TerminalOutput`."""

        def __init__(self, app: App[Any], **kwargs: Any) -> None:
            super().__init__(app, **kwargs)
            self._file = TerminalOutput(self._file)  # type: ignore[assignment]  # a file in all it uses

    return HangUpSafeLinuxDriver


class TerminalOutput:
    """The driver's output file; after its first failed write (the terminal is gone) it drops output."""

    def __init__(self, file: Any) -> None:
        self._file = file
        self.gone = False
        """Whether a write or flush has failed (every later one is skipped)."""

    def write(self, text: str) -> int:
        """Write ``text``; after a failure, drop it (and report it as written)."""
        if not self.gone:
            try:
                return int(self._file.write(text))
            except OSError:
                self.gone = True
        return len(text)

    def flush(self) -> None:
        """Flush; a failure marks the terminal gone."""
        if not self.gone:
            try:
                self._file.flush()
            except OSError:
                self.gone = True

    def fileno(self) -> int:
        """The real file's descriptor."""
        return int(self._file.fileno())

    def isatty(self) -> bool:
        """Whether the real file is a terminal (``False`` once it is gone)."""
        if self.gone:
            return False
        try:
            return bool(self._file.isatty())
        except (OSError, ValueError):
            return False
