"""The TUI's headless layer: session loading steps, row lookups, facts, badges, queries, keymaps."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.errors import ConfigError
from fpdebug.trace.reader import TraceReader
from fpdebug.tui.keymap import KEYMAP_ENV, find_keymap, load_keymap
from fpdebug.tui.query import Query
from fpdebug.tui.session import TraceSession
from tests.tui.traces import grow, sample


def _loaded(path: Path) -> TraceSession:
    session = TraceSession(TraceReader(path, index=False))
    session.index_step(chunk_size=64)
    while not session.index_done:
        session.index_step(chunk_size=64)
    while session.model_step(limit=3):
        pass
    return session


class TestLoading:
    def test_steps_index_in_chunks_and_model_in_slices(
        self, support_run_trace: tuple[Path, dict[str, int]]
    ) -> None:
        path, _ = support_run_trace
        session = TraceSession(TraceReader(path, index=False))
        assert session.lines == 0
        added = session.index_step(chunk_size=256)
        assert 0 < added < 30 and not session.index_done
        assert 0 < session.scanned < session.total
        while not session.index_done:
            session.index_step(chunk_size=256)
        assert session.scanned == session.total == path.stat().st_size
        assert session.model_step(limit=5) == 5
        assert not session.model_done
        while session.model_step(limit=5):
            pass
        assert session.model_done
        assert [(it.turn, it.number) for it in session.iterations] == [(1, 1), (1, 2), (1, 3), (1, 4)]
        assert [lease.instruction_id for lease in session.leases] == ["wire-format", "style", "style"]

    def test_poll_picks_up_appended_iterations(self, tmp_path: Path) -> None:
        path = tmp_path / "t.fptrace.jsonl"
        path.write_bytes(sample("leases").read_bytes())
        session = _loaded(path)
        before = len(session.iterations)
        run_id = session.model.runs[0].run_id
        grow(path, run_id=run_id, first_seq=session.lines, iteration=1, turn=2)
        assert session.poll() == (2, 1)
        assert len(session.iterations) == before + 1
        assert session.iterations[-1].turn == 2
        assert session.poll() == (0, 0)


class TestLookups:
    def test_rows_are_found_from_lines_and_passes(
        self, support_run_trace: tuple[Path, dict[str, int]]
    ) -> None:
        path, at = support_run_trace
        session = _loaded(path)
        assert session.row_at_line(at["pass3"]) == 2
        assert session.row_at_line(at["prune_tenure"]) == 2
        assert session.row_at_line(at["turn_start"]) is None
        assert session.row_of(session.iterations[3]) == 3
        assert session.row_of_pass("r1", 1, 2) == 1
        assert session.row_of_pass("r1", 1, 9) is None
        assert session.find_iteration(4) == 3
        assert session.label(session.iterations[0]) == "T1·I1"

    def test_facts_and_badges_of_rows(self, support_run_trace: tuple[Path, dict[str, int]]) -> None:
        path, _ = support_run_trace
        session = _loaded(path)
        assert session.facts(1).active == 3 and session.facts(1).evaluated == 3
        assert session.facts(1).prune_reasons == ("spent",)
        assert session.facts(2).parked_maps == ("skill-map",)
        assert session.badges(0) == ["grant"]
        assert session.badges(1) == ["prune", "conflict"]
        assert session.badges(2) == ["grant", "prune", "park", "rejected"]
        assert session.badges(3) == ["reengage", "superseded"]

    def test_invalid_and_opaque_lines_mark_their_neighbours(
        self, hostile_trace: tuple[Path, dict[str, int]]
    ) -> None:
        path, at = hostile_trace
        session = _loaded(path)
        assert session.model.invalid_lines[:2] == [at["invalid_json"], at["bad_utf8"]]
        assert session.line_kind(at["opaque"]) == "opaque"
        assert session.line_kind(at["invalid_json"]) == "invalid"
        assert "invalid" not in session.badges(0)
        assert session.facts(0).active == 2


class TestQueries:
    def test_parse_words_fields_and_quotes(self) -> None:
        query = Query.parse('Refund "two words" kind:lease_prune skill:billing badge:Park')
        assert query.words == ("refund", "two words")
        assert query.kinds == ("lease_prune",) and query.skills == ("billing",) and query.badges == ("park",)
        assert Query.parse('unbalanced "quote').words == ("unbalanced", '"quote')
        assert Query.parse("   ").empty

    def test_needles_are_json_escaped(self) -> None:
        assert Query.parse(r"say\"hi\"").needles == (b'say\\"hi\\"',)

    def test_timeline_matching(self, support_run_trace: tuple[Path, dict[str, int]]) -> None:
        path, _ = support_run_trace
        session = _loaded(path)

        def rows(text: str) -> list[int]:
            query = Query.parse(text)
            return [row for row in range(len(session.iterations)) if session.iteration_matches(row, query)]

        assert rows("kind:lease_prune") == [1, 2]
        assert rows("badge:park") == [2]
        assert rows("skill:billing") == [2, 3]
        assert rows("lookup") == [1]  # a tool name inside a tool_result record
        assert rows("kind:lease_grant refund") == [2]
        assert rows("kind:no_such_kind") == []

    def test_event_and_lease_matching(self, support_run_trace: tuple[Path, dict[str, int]]) -> None:
        path, at = support_run_trace
        session = _loaded(path)
        lines = [
            line
            for line in range(session.lines)
            if session.line_matches(line, Query.parse("kind:lease_prune"))
        ]
        assert lines == [at["prune_spent"], at["prune_tenure"]]
        leases = [
            i for i in range(len(session.leases)) if session.lease_matches(i, Query.parse("tenure-ended"))
        ]
        assert leases == [1]


class TestKeymap:
    def test_load_and_validate(self, tmp_path: Path) -> None:
        path = tmp_path / "keymap.toml"
        path.write_text('[keys]\ncursor-down = "j, ctrl+n"\n', encoding="utf-8")
        assert load_keymap(path, known_ids={"cursor-down"}) == {"cursor-down": "j,ctrl+n"}
        with pytest.raises(ConfigError, match="unknown binding id 'cursor-down'"):
            load_keymap(path, known_ids={"quit"})

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("[keys\n", "not valid TOML"),
            ("x = 1\n", r"needs a \[keys\] table"),
            ("[keys]\nquit = 3\n", "non-empty string"),
        ],
    )
    def test_bad_files_are_clear_errors(self, tmp_path: Path, content: str, message: str) -> None:
        path = tmp_path / "keymap.toml"
        path.write_text(content, encoding="utf-8")
        with pytest.raises(ConfigError, match=message):
            load_keymap(path)

    def test_where_the_keymap_is_found(self, tmp_path: Path) -> None:
        assert find_keymap(environ={"XDG_CONFIG_HOME": str(tmp_path)}) is None
        default = tmp_path / "fpdebug" / "keymap.toml"
        default.parent.mkdir()
        default.write_text("[keys]\n", encoding="utf-8")
        assert find_keymap(environ={"XDG_CONFIG_HOME": str(tmp_path)}) == default
        other = tmp_path / "other.toml"
        other.write_text("[keys]\n", encoding="utf-8")
        assert find_keymap(environ={KEYMAP_ENV: str(other), "XDG_CONFIG_HOME": str(tmp_path)}) == other
        with pytest.raises(ConfigError, match="not found"):
            find_keymap(tmp_path / "missing.toml", environ={})
