"""Every reference to the semantics resolves: a page in ``docs/`` and a section anchor in it.

Code, tests, the bench, the README and the docs themselves cite the semantics as
``docs/<page>.md §N.N``. Each page marks its sections with ``<a id="sN.N"></a>``, an anchor that
renders on GitHub and in the docs site alike and does not change when a heading is reworded.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = re.compile(r"docs/([a-z0-9-]+)\.md`? §(\d+(?:\.\d+)?b?)")
ANCHOR = re.compile(r'<a id="s([0-9.]+b?)"></a>')
RANGE_TAIL = re.compile(r"§(\d+(?:\.\d+)?b?)–§?(\d+(?:\.\d+)?b?)")


def _cited_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for folder in ("fpdebug", "tests", "bench"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return [path for path in files if path.is_file()]


def _anchors(page: Path) -> set[str]:
    return set(ANCHOR.findall(page.read_text(encoding="utf-8")))


def _references() -> list[tuple[str, int, str, str]]:
    found = []
    for path in _cited_files():
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), start=1):
            for match in REFERENCE.finditer(line):
                section = match.group(2)
                found.append((str(path.relative_to(ROOT)), number, match.group(1), section))
                # "§4.1–§4.2" and "§1–§6": the end of a range must resolve too.
                tail = RANGE_TAIL.match(line, match.start(2) - 1)
                if tail:
                    found.append((str(path.relative_to(ROOT)), number, match.group(1), tail.group(2)))
    return found


def test_the_code_cites_the_semantics_many_times() -> None:
    # A regex that stopped matching would make the next test pass on nothing.
    assert len(_references()) > 150


@pytest.mark.parametrize("page", ["context-model", "trace-contract", "backtracking", "honesty"])
def test_each_semantics_page_exists_with_its_anchors(page: str) -> None:
    path = ROOT / "docs" / f"{page}.md"
    assert path.is_file(), f"docs/{page}.md is missing"
    assert _anchors(path), f"docs/{page}.md marks no section with <a id=...>"


def test_every_reference_resolves_to_a_page_and_an_anchor() -> None:
    pages: dict[str, set[str]] = {}
    dangling = []
    for where, line, page, section in _references():
        path = ROOT / "docs" / f"{page}.md"
        if page not in pages:
            pages[page] = _anchors(path) if path.is_file() else set()
        if section not in pages[page]:
            dangling.append(f"{where}:{line}: docs/{page}.md §{section}")
    assert not dangling, "dangling references:\n" + "\n".join(dangling)


def test_no_reference_points_outside_the_repository() -> None:
    # The design documents the project started from are not in the repository; cite docs/ instead.
    stale = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _cited_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"\bDOMAIN(\.md)? ?§|DOMAIN\.md", line)
    ]
    assert not stale, "references to a document outside the repository:\n" + "\n".join(stale)


PATH_MENTION = re.compile(r"`((?:fpdebug|tests|bench|sample_traces)/[A-Za-z0-9_./-]*[A-Za-z0-9_/])`")


def test_every_file_the_docs_name_exists() -> None:
    # "Where it lives" lines send a reader to a module, a view and a test: each must be there.
    missing = []
    for path in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in PATH_MENTION.finditer(line):
                named = match.group(1).split("::")[0]
                if named.startswith("bench/out"):
                    continue  # where the bench writes its results: made by a run, not committed
                if not (ROOT / named).exists():
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {named}")
    assert not missing, "the docs name files that do not exist:\n" + "\n".join(missing)
