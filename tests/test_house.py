"""The house rules a reviewer checks by eye, checked on every run: module size and function complexity.

A module owns one concept, so none grows past 800 lines (the event schema, one discriminated union,
is the exception). No function has a cyclomatic complexity above 25, as radon counts it: past that a
function is several steps that deserve names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from radon.complexity import cc_visit

PACKAGE = Path(__file__).resolve().parents[1] / "fpdebug"
MAX_LINES = 800
MAX_COMPLEXITY = 25
EXEMPT_FROM_SIZE = {"trace/schema.py"}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_package_has_modules_to_check() -> None:
    assert len(_modules()) > 80


def test_no_module_is_over_800_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in _modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and str(path.relative_to(PACKAGE)) not in EXEMPT_FROM_SIZE
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def _blocks(blocks: list[Any]) -> list[Any]:
    """Every function radon sees: top-level ones, methods, and the closures inside either."""
    found = []
    for block in blocks:
        found.append(block)
        found += _blocks([*getattr(block, "methods", []), *getattr(block, "closures", [])])
    return found


def test_no_function_is_more_complex_than_25() -> None:
    complex_ = []
    for path in _modules():
        for item in _blocks(cc_visit(path.read_text(encoding="utf-8"))):
            if item.complexity > MAX_COMPLEXITY:
                complex_.append(f"{path.relative_to(PACKAGE)}:{item.lineno} {item.name} ({item.complexity})")
    assert not complex_, "functions above complexity 25:\n" + "\n".join(sorted(set(complex_)))
