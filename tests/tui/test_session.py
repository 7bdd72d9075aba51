"""The TUI's headless layer: session loading steps, row lookups, facts, badges, queries, keymaps."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpdebug.errors import ConfigError
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import RunStartEvent
from fpdebug.tui.keymap import KEYMAP_ENV, find_keymap, load_keymap
from fpdebug.views.query import Query
from fpdebug.views.session import RUN_START_CACHE, TraceSession
from tests.tui.helpers import load_session
from tests.tui.traces import grow, sample, write_runs


def _loaded(path: Path) -> TraceSession:
    return load_session(path, chunk_size=64, limit=3)  # many small steps


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
        # Not _loaded: 64-byte steps over the 10 MB of huge strings are 165k steps for nothing.
        session = load_session(path, chunk_size=4096, limit=3)
        assert session.model.invalid_lines[:2] == [at["invalid_json"], at["bad_utf8"]]
        assert session.line_kind(at["opaque"]) == "opaque"
        assert session.line_kind(at["invalid_json"]) == "invalid"
        assert "invalid" not in session.badges(0)
        assert session.facts(0).active == 2


def _interleaved(choices: list[tuple[int, bool]]) -> list[tuple[str, int, int]]:
    """Passes of up to four runs in the order ``choices`` picks them (``True``: that run starts a turn)."""
    where: dict[str, tuple[int, int]] = {}
    passes: list[tuple[str, int, int]] = []
    for run, new_turn in choices:
        run_id = f"run-{run}"
        turn, iteration = where.get(run_id, (1, 0))
        turn, iteration = (turn + 1, 1) if new_turn and iteration else (turn, iteration + 1)
        where[run_id] = (turn, iteration)
        passes.append((run_id, turn, iteration))
    return passes


def _first_match(session: TraceSession, number: int, turn: int | None, near: int) -> int | None:
    """What ``find_iteration`` promises, by looking at every row."""
    rows = [
        row
        for row, iteration in enumerate(session.iterations)
        if iteration.number == number and (turn is None or iteration.turn == turn)
    ]
    return next((row for row in rows if row >= near), rows[0] if rows else None)


class TestManyRuns:
    """Rows, leases, labels and lookups over several runs whose records interleave."""

    PASSES = [
        ("a", 1, 1), ("a", 1, 2), ("b", 1, 1), ("a", 1, 3), ("b", 1, 2), ("c", 1, 1),
        ("a", 2, 1), ("c", 1, 2), ("b", 2, 1), ("a", 2, 2), ("c", 2, 1), ("b", 2, 2),
    ]  # fmt: skip

    def test_rows_and_leases_of_every_run_arrive_slice_by_slice(self, tmp_path: Path) -> None:
        path = tmp_path / "runs.fptrace.jsonl"
        write_runs(path, self.PASSES)
        session = _loaded(path)  # three lines per model step: every step adds rows and leases
        assert [(it.run_id, it.turn, it.number) for it in session.iterations] == self.PASSES
        for run in "abc":  # every lease once, in grant order per run
            granted = [f"{run}-{turn}-{number}" for run_id, turn, number in self.PASSES if run_id == run]
            assert [lease.instruction_id for lease in session.leases if lease.run_id == run] == granted
        assert len(session.leases) == len(self.PASSES)
        # Each step adds the new leases run by run, in the order the runs first appeared (what
        # walking every run found; the model's lease log now says which runs to look at).
        stepped, expected, seen = TraceSession(TraceReader(path)), [], {}
        while stepped.model_step(limit=3):
            for run_model in stepped.model.runs:
                expected.extend(run_model.leases[seen.get(run_model.run_id, 0) :])
                seen[run_model.run_id] = len(run_model.leases)
        assert len(expected) == len(self.PASSES)
        assert [id(lease) for lease in stepped.leases] == [id(lease) for lease in expected]
        assert [session.label(it) for it in session.iterations[:3]] == ["1:T1·I1", "1:T1·I2", "2:T1·I1"]
        assert session.run_number("c") == 3 and session.run_number("nope") == 0

    def test_find_iteration_prefers_the_first_match_after_near(self, tmp_path: Path) -> None:
        path = tmp_path / "runs.fptrace.jsonl"
        write_runs(path, self.PASSES)
        session = _loaded(path)
        assert session.find_iteration(2, turn=1) == 1  # a's T1·I2
        assert session.find_iteration(2, turn=1, near=2) == 4  # b's, the next one from row 2
        assert session.find_iteration(2, turn=1, near=8) == 1  # none after row 8: the first
        assert session.find_iteration(2, near=9) == 9  # any turn: a's T2·I2
        assert session.find_iteration(3) == 3
        assert session.find_iteration(3, turn=2) is None
        assert session.find_iteration(7) is None

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(choices=st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=30))
    def test_find_iteration_agrees_with_a_scan_of_every_row(
        self, tmp_path: Path, choices: list[tuple[int, bool]]
    ) -> None:
        path = tmp_path / "fuzz.fptrace.jsonl"
        path.unlink(missing_ok=True)
        write_runs(path, _interleaved(choices))
        session = _loaded(path)
        rows = len(session.iterations)
        for number in range(1, 5):
            for turn in (None, 1, 2, 3):
                for near in range(rows + 1):
                    assert session.find_iteration(number, turn=turn, near=near) == _first_match(
                        session, number, turn, near
                    ), (number, turn, near)

    def test_run_starts_are_kept_for_a_few_runs_only(self, tmp_path: Path) -> None:
        runs = RUN_START_CACHE * 3
        path = tmp_path / "many.fptrace.jsonl"
        write_runs(path, [(f"r{k}", 1, 1) for k in range(runs)])
        session = _loaded(path)
        for _ in range(2):
            for run in session.model.runs:
                start = session.run_start(run.run_id)
                assert isinstance(start, RunStartEvent) and start.model == f"model-{run.run_id}"
        held = [rec for rec in session.reader._cache.values() if isinstance(rec, RunStartEvent)]
        assert len(session._run_starts) == RUN_START_CACHE and not held
        assert session.run_start("no-such-run") is None


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
