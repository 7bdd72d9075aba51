"""The demo scenarios play their stories (checked on the trace each wrote), and the samples stay current."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
import types
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.demo import (
    SAMPLE_RUN_PREFIX,
    SCENARIOS,
    load_scenario,
    load_target,
    planted_fact,
    run_target,
    sample_path,
    write_samples,
)
from fpdebug.engine.agent import Agent
from fpdebug.errors import DefinitionError, ScenarioError
from fpdebug.trace.model import RunModel
from fpdebug.trace.schema import (
    CursorMoveEvent,
    EngagementEvent,
    LlmCallEvent,
    PassEvent,
    RunStartEvent,
    TraceEvent,
    TurnEndEvent,
)
from tests.conftest import T0
from tests.demo.helpers import SAMPLES, events_of, run_events


def of(events: list[TraceEvent], cls: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, cls)]


def test_the_registry_lists_every_scenario_with_the_contract() -> None:
    assert list(SCENARIOS) == [
        "support",
        "zone-trap",
        "planted-fact",
        "leases",
        "leases-cyclic",
        "unsupported-amount",
        "traced-argument",
        "revised-amount",
        "step-nudge",
        "wrap-up",
        "cost-budget",
        "output-retry",
        "time-window",
        "continuity",
        "cascade",
        "decision-tree",
        "entry-rules",
        "argument-ask",
        "recalled-fact",
        "windowed",
    ]
    for name in SCENARIOS:
        scenario = load_scenario(name)
        assert scenario.name == name and scenario.builtin and scenario.description
        assert scenario.user_messages and scenario.expected
        first, second = scenario.scripted_provider(), scenario.scripted_provider()
        assert first is not second  # a fresh model per call: reruns never share a script cursor
        scenario.build_agent()  # declares cleanly


def test_support_walks_triage_billing_refund_with_two_leases(tmp_path: Path) -> None:
    events = run_events("support", tmp_path)
    expected = load_scenario("support").expected
    assert [m.to_skill for m in of(events, CursorMoveEvent)] == expected["cursor"]
    assert [m.by for m in of(events, CursorMoveEvent)] == ["entry", "route", "stay", "model-pick", "stay"]
    served = [(p.iteration, p.lease_active_ids) for p in of(events, PassEvent)]
    assert served == [(1, None), (2, None), (3, ["refund-policy", "wire-format"]), (4, []), (5, [])]
    model = RunModel.build(events_with_header(events))
    leases = {lease.instruction_id: lease for lease in model.runs[0].leases}
    assert (leases["refund-policy"].delivery_lease, leases["refund-policy"].tenant) == (
        "until-skill-exit",
        "billing",
    )
    assert (leases["refund-policy"].state, leases["wire-format"].state) == ("tenure-ended", "spent")
    (end,) = of(events, TurnEndEvent)
    assert (end.final_content, end.iteration_count) == (expected["final"], expected["iterations"])
    (start,) = of(events, RunStartEvent)
    assert start.options["scenario"] == "support"


def events_with_header(events: list[TraceEvent]) -> list[object]:
    from fpdebug.trace.schema import TraceHeader

    return [TraceHeader(producer="test", created=T0), *events]


def test_zone_trap_parks_and_re_engages(tmp_path: Path) -> None:
    events = run_events("zone-trap", tmp_path)
    expected = load_scenario("zone-trap").expected
    changes = [(c.kind, c.iteration, c.reengaged) for e in of(events, EngagementEvent) for c in e.changes]
    assert changes == [
        ("engaged", 1, None),
        ("parked", expected["parked_on"], None),
        ("engaged", expected["reengaged_on"], True),
    ]
    calls = of(events, LlmCallEvent)
    assert ["get_zone_info" in [t.name for t in c.request.tools] for c in calls] == [
        True,
        True,
        True,
        False,
        True,
    ]
    assert {m.to_skill for m in of(events, CursorMoveEvent)} == {"zone-audit"}  # parking never moves it
    assert of(events, TurnEndEvent)[0].iteration_count == expected["iterations"]


def test_leases_timelines(tmp_path: Path) -> None:
    linear = run_events("leases", tmp_path)
    expected = load_scenario("leases").expected
    assert {p.iteration: p.lease_active_ids for p in of(linear, PassEvent)} == expected["served"]
    cyclic = run_events("leases-cyclic", tmp_path)
    expected = load_scenario("leases-cyclic").expected
    assert [m.to_skill for m in of(cyclic, CursorMoveEvent)] == expected["cursor"]
    assert ["triage-notes" in p.active_ids for p in of(cyclic, PassEvent)] == expected["served"]


class TestPlantedFact:
    def answer(self, *, variant: str = "single", without: tuple[str, ...] = ()) -> str:
        agent = planted_fact.build_agent(variant=variant)  # type: ignore[arg-type]
        if without:
            agent = agent.without(injection_ids=without)
        provider = planted_fact.scripted_provider(variant=variant)  # type: ignore[arg-type]
        return agent.run(list(planted_fact.USER_MESSAGES), provider=provider).content

    def test_the_planted_fact_causes_the_wrong_answer_and_only_it(self) -> None:
        assert self.answer() == planted_fact.APPROVED
        assert self.answer(without=("vip-override",)) == planted_fact.DECLINED
        for innocent in ("tone", "refund-limits", "format-answer"):
            assert self.answer(without=(innocent,)) == planted_fact.APPROVED

    def test_a_joint_culprit_must_be_removed_as_a_pair(self) -> None:
        # Either fact is enough to approve: removing one changes nothing, removing both flips.
        assert self.answer(variant="joint") == planted_fact.APPROVED
        assert self.answer(variant="joint", without=("vip-override",)) == planted_fact.APPROVED
        assert self.answer(variant="joint", without=("legacy-policy",)) == planted_fact.APPROVED
        both = ("vip-override", "legacy-policy")
        assert self.answer(variant="joint", without=both) == planted_fact.DECLINED

    def test_two_independent_culprits_each_flip_alone(self) -> None:
        # Approval needs both facts: removing either one alone flips the answer.
        assert self.answer(variant="independent") == planted_fact.APPROVED
        assert self.answer(variant="independent", without=("vip-flag",)) == planted_fact.DECLINED
        assert self.answer(variant="independent", without=("vip-policy",)) == planted_fact.DECLINED

    def test_an_answer_no_context_changes(self) -> None:
        assert self.answer(variant="unchanged") == planted_fact.DECLINED
        assert self.answer(variant="unchanged", without=("vip-override",)) == planted_fact.DECLINED

    def test_the_culprits_are_declared_for_the_tests_that_search_for_them(self) -> None:
        culprits = planted_fact.EXPECTED["culprits"]
        assert set(culprits) == set(planted_fact.VARIANTS)  # type: ignore[arg-type]
        with pytest.raises(DefinitionError, match="unknown planted-fact variant"):
            planted_fact.build_agent(variant="other")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------
# Samples


def test_the_committed_samples_are_exactly_what_the_command_regenerates(tmp_path: Path) -> None:
    written = write_samples(tmp_path)
    assert [p.name for p in written] == [sample_path(SAMPLES, name).name for name in SCENARIOS]
    for fresh in written:
        committed = SAMPLES / fresh.name
        assert committed.is_file(), (
            f"{committed} is missing: run `fpdebug demo --write-samples sample_traces`"
        )
        assert fresh.read_bytes() == committed.read_bytes(), (
            f"{committed.name} is stale: run `fpdebug demo --write-samples sample_traces`"
        )


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_fpdebug_validate_accepts_each_sample(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = sample_path(SAMPLES, name)
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"{path}: ok")
    (start,) = [e for e in events_of(path) if isinstance(e, RunStartEvent)]
    assert (start.run_id, start.options["scenario"]) == (f"{SAMPLE_RUN_PREFIX}{name}", name)


# ----------------------------------------------------------------------------------------------
# Loading targets


def test_a_users_module_file_follows_the_same_contract(tmp_path: Path) -> None:
    module = tmp_path / "my_agent.py"
    module.write_text(
        textwrap.dedent(
            """
            from fpdebug.engine.agent import Agent
            from fpdebug.engine.providers.scripted import ScriptedProvider

            USER_MESSAGES = ["hello"]

            def build_agent():
                return Agent("mine").system_prompt("Be kind.")

            def scripted_provider():
                return ScriptedProvider(reply="hi there")
            """
        )
    )
    scenario = load_target(str(module))
    assert (scenario.name, scenario.builtin, scenario.options) == ("my_agent", False, {"module": str(module)})
    run = run_target(scenario, trace_path=tmp_path / "out" / "mine.jsonl")
    assert run.result.content == "hi there" and run.trace_path.is_file()


def test_a_module_whose_scripted_provider_returns_no_provider_is_a_scenario_error(tmp_path: Path) -> None:
    module = tmp_path / "odd_agent.py"
    module.write_text(
        "from fpdebug.engine.agent import Agent\n"
        "def build_agent():\n    return Agent('odd')\n"
        "def scripted_provider():\n    return 5\n"
    )
    scenario = load_target(str(module))
    trace = tmp_path / "odd.jsonl"
    with pytest.raises(
        ScenarioError, match=r"odd_agent.py: scripted_provider\(\) returned no provider: .*not int 5"
    ):
        run_target(scenario, trace_path=trace)
    assert not trace.exists()  # refused before the trace file was created


@pytest.mark.parametrize("mistake", ["provider", "agent"])
def test_a_bad_provider_or_agent_given_to_run_target_leaves_no_trace_file(
    mistake: str, tmp_path: Path
) -> None:
    scenario = load_target("support")
    trace = tmp_path / "t.jsonl"
    if mistake == "provider":
        with pytest.raises(DefinitionError, match="the provider must be a Provider"):
            run_target(scenario, trace_path=trace, provider=object())  # type: ignore[arg-type]
    else:
        # .maps() with no skill map: a mistake found when the agent compiles, not when declared.
        broken = dataclasses.replace(
            scenario, module=types.SimpleNamespace(build_agent=lambda: Agent("a").maps(renewal_grace=2))
        )
        with pytest.raises(DefinitionError, match="nothing is mounted"):
            run_target(broken, trace_path=trace, provider=scenario.scripted_provider())
    assert not trace.exists()


def test_a_dotted_module_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "pkg_for_fpdebug"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(
        "from fpdebug.engine.agent import Agent\nNAME = 'dotted'\ndef build_agent():\n    return Agent('d')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    scenario = load_target("pkg_for_fpdebug.agent")
    assert scenario.name == "dotted" and scenario.user_messages == ()
    with pytest.raises(ScenarioError, match="has no scripted_provider"):
        scenario.scripted_provider()
    with pytest.raises(ScenarioError, match="declares no USER_MESSAGES"):
        run_target(scenario, trace_path=tmp_path / "x.jsonl", provider=planted_fact.scripted_provider())
    sys.modules.pop("pkg_for_fpdebug.agent", None)
    sys.modules.pop("pkg_for_fpdebug", None)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("no-such-scenario", "is neither a scenario"),
        ("missing/file.py", "no such file"),
        ("broken", "importing it raised ZeroDivisionError"),
        ("empty", "defines no build_agent"),
        ("wrong", "returned str, not an Agent"),
    ],
)
def test_a_bad_target_is_a_clear_scenario_error(tmp_path: Path, source: str, message: str) -> None:
    bodies = {
        "broken": "x = 1 / 0\n",
        "empty": "NAME = 'empty'\n",
        "wrong": "def build_agent():\n    return 'agent'\n",
    }
    target = source
    if source in bodies:
        target = str(tmp_path / f"{source}.py")
        Path(target).write_text(bodies[source])
    with pytest.raises(ScenarioError, match=message):
        load_target(target).build_agent()
