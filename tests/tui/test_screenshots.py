"""The README's screenshots are taken by the app itself, from the committed samples."""

from __future__ import annotations

from pathlib import Path

from fpdebug.tui.screenshots import SHOTS, Shot, take
from tests.tui.traces import SAMPLES


def test_a_shot_is_an_svg_of_the_view_it_names(tmp_path: Path) -> None:
    path = take(Shot("leases", "support", ("j", "j", "2"), title="Leases"), samples=SAMPLES, out=tmp_path)
    svg = path.read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "Leases" in svg
    assert "tenure-ended&#160;T1·I4" in svg  # the lease whose tenant changed, as drawn


def test_every_readme_screenshot_exists() -> None:
    readme = (SAMPLES.parent / "README.md").read_text(encoding="utf-8")
    for shot in SHOTS:
        name = f"docs/screenshots/{shot.name}.svg"
        assert name in readme
        assert (SAMPLES.parent / name).is_file()
