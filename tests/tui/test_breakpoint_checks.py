"""Every breakpoint is checked against what the run declares (issue 20): a tool it cannot call, a skill
its map does not have or a kind that does not exist is refused with a "did you mean", on the command
line (on a terminal or not, before any trace is written). The menu's refusal is in test_keys_everywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.demo.registry import load_scenario
from fpdebug.errors import ConfigError
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import RunStartEvent
from fpdebug.tui.drive.declared import Declared
from fpdebug.tui.drive.gate import Breakpoint
from tests.tui.traces import sample


@pytest.fixture(scope="module")
def support() -> Declared:
    return Declared.of_agent(load_scenario("support").build_agent())


class TestDeclared:
    def test_the_agent_declares_what_its_run_start_records(self, support: Declared) -> None:
        with TraceReader(sample("support")) as reader:
            start = next(record for record in reader if isinstance(record, RunStartEvent))
        assert support == Declared.of_start(start)
        assert "issue_refund" in support.tools and "read_skill" in support.tools
        assert support.skills == ("triage", "billing", "refund")

    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            ("tool:issue_refund", Breakpoint.tool("issue_refund")),
            ("cursor:billing", Breakpoint.cursor_into("billing")),
            ("lease_prune", Breakpoint.on_kind("lease_prune")),
            ("park", Breakpoint.park()),
        ],
    )
    def test_what_the_run_declares_is_accepted(
        self, support: Declared, spec: str, expected: Breakpoint
    ) -> None:
        assert support.parse(spec) == expected

    @pytest.mark.parametrize(
        ("spec", "said"),
        [
            ("tool:issue_refnd", "no tool 'issue_refnd' (did you mean 'issue_refund'?)"),
            ("tool:nosuch", "the run declares no tool 'nosuch'; its tools: lookup_order"),
            ("cursor:billng", "'billng' is not a skill of the map (did you mean 'billing'?)"),
            ("cursor:nowhere", "'nowhere' is not a skill of the map; its skills: triage, billing, refund"),
            ("lease_prun", "unknown breakpoint 'lease_prun' (did you mean 'lease_prune'?)"),
            ("foo", "unknown breakpoint 'foo': use an event kind"),
        ],
    )
    def test_what_it_does_not_is_refused_with_the_nearest_name(
        self, support: Declared, spec: str, said: str
    ) -> None:
        with pytest.raises(ConfigError) as refused:
            support.parse(spec)
        assert said in str(refused.value)

    def test_a_cursor_breakpoint_without_a_map_says_the_cursor_never_moves(self) -> None:
        with pytest.raises(ConfigError, match="declares no skill map"):
            Declared(tools=("t",)).parse("cursor:billing")


class TestTheCommandLine:
    @pytest.mark.parametrize(
        ("command", "said"),
        [
            (["demo", "--break", "foo"], "unknown breakpoint 'foo'"),
            (["demo", "--break", "tool:nosuch"], "no tool 'nosuch'"),
            (["run", "support", "--break", "cursor:nowhere"], "'nowhere' is not a skill"),
        ],
    )
    def test_off_a_terminal_a_bad_breakpoint_exits_non_zero_before_the_run(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], said: str
    ) -> None:
        trace = tmp_path / "never.fptrace.jsonl"
        assert main([*command, "--trace", str(trace)]) == 2
        assert said in capsys.readouterr().err
        assert not trace.exists()  # refused before the run wrote anything
