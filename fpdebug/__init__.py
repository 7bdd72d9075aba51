"""fpdebug: an explainable agent engine and its terminal debugger.

The headless public API lives in the sub-packages (``fpdebug.trace``, ``fpdebug.engine``,
``fpdebug.backtrack``). Importing :mod:`fpdebug` never imports Textual or a model SDK.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
