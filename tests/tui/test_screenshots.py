"""The screenshots in the README and the docs are taken by the app itself, from the committed samples."""

from __future__ import annotations

import re
from pathlib import Path

from fpdebug.tui.screenshots import SHOTS, Shot, take
from tests.tui.traces import SAMPLES

ROOT = SAMPLES.parent
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]*screenshots/([A-Za-z0-9_-]+)\.svg)\)")
"""A Markdown image of a screenshot: ``![…](docs/screenshots/x.svg)`` or ``![…](../screenshots/x.svg)``."""


def _pages() -> list[Path]:
    """The README and every page of the docs: where a screenshot may be shown."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _shown() -> list[tuple[Path, str, str]]:
    """Every screenshot shown: (the page, the link as written, the shot's name)."""
    return [
        (page, match.group(1), match.group(2))
        for page in _pages()
        for match in IMAGE.finditer(page.read_text(encoding="utf-8"))
    ]


def test_a_shot_is_an_svg_of_the_view_it_names(tmp_path: Path) -> None:
    path = take(Shot("leases", "support", ("j", "j", "2"), title="Leases"), samples=SAMPLES, out=tmp_path)
    svg = path.read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "Leases" in svg
    assert "tenure-ended&#160;T1·I4" in svg  # the lease whose tenant changed, as drawn


def test_every_readme_screenshot_exists() -> None:
    # Each shot the app takes is shown somewhere (the README or a docs page), and its file exists.
    shown = {name for _, _, name in _shown()}
    for shot in SHOTS:
        assert shot.name in shown, f"docs/screenshots/{shot.name}.svg is shown on no page"
        assert (ROOT / f"docs/screenshots/{shot.name}.svg").is_file()


def test_every_screenshot_shown_is_one_the_app_takes() -> None:
    # A link to a file that is missing, or to a picture the app no longer retakes (so it would go
    # stale after the next visible change), fails here.
    taken = {shot.name for shot in SHOTS}
    shown = _shown()
    assert any(page.name == "README.md" for page, _, _ in shown), "the README shows no screenshot"
    for page, link, name in shown:
        where = page.relative_to(ROOT)
        assert (page.parent / link).resolve().is_file(), f"{where}: {link} does not exist"
        assert (page.parent / link).resolve() == (ROOT / f"docs/screenshots/{name}.svg").resolve(), where
        assert name in taken, f"{where}: {link} is not taken by python -m fpdebug.tui.screenshots"
