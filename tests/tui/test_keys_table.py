"""One source of truth for the keys (issue 20): the ``?`` help and the key tables of the README and the
debugger guide are all made from the app's bindings, so they cannot drift. The help as drawn is read
in test_keys_everywhere; here the documents and the help's text are compared with the bindings.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding

from fpdebug.tui.drive.app import DriveApp
from fpdebug.tui.keys_table import END, TARGETS, keys_table, main, replace_table
from fpdebug.tui.screens.help_screen import help_document
from fpdebug.tui.text import Palette
from tests.tui.helpers import document_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("name", "compact"), TARGETS.items())
def test_the_docs_key_table_is_the_generated_one(name: str, compact: bool) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    assert END in text, f"{name} has lost its generated key table"
    assert replace_table(text, compact=compact) == text, (
        f"the key table of {name} is not the bindings': run python -m fpdebug.tui.keys_table --write"
    )


def test_the_table_has_every_binding_and_the_readme_lists_more_than_the_views() -> None:
    table = keys_table()
    bindings = [
        binding
        for _title, group in DriveApp.binding_groups()
        for binding in group
        if isinstance(binding, Binding) and binding.id is not None
    ]
    for binding in bindings:
        assert f"| `{binding.id}` |" in table
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for row in (
        "| `i` | Ablate, then bisect",
        "| `b` | Choose breakpoints",
        "| `/` | Filter the view's list",
    ):
        assert row in readme


def test_the_help_shows_what_the_table_lists() -> None:
    """Each row of the table (its key, id and words) is a row of the ``?`` help, from the same groups."""
    groups = DriveApp.binding_groups()
    help_rows = [
        " ".join(line.split()) for line in document_text(help_document(groups, {}, Palette())).splitlines()
    ]
    for _title, group in groups:
        for binding in group:
            assert isinstance(binding, Binding) and binding.id is not None
            words = " ".join((binding.tooltip or binding.description).split()[:4])
            assert any(f" {binding.id} {words}" in row for row in help_rows), (
                f"the help has no row for {binding.id} saying {words!r}"
            )


def test_the_generator_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--compact"]) == 0
    assert capsys.readouterr().out == keys_table(compact=True)
