"""The pass inspector shows the step pointer (docs/context-model.md §5.6) when a trace carries one, else nothing."""

from __future__ import annotations

from pathlib import Path

from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_skill
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.trace.reader import TraceReader
from fpdebug.tui.widgets.inspector import inspect_iteration
from tests.engine.test_agent import record
from tests.engine.test_agent_steps import charge, lookup, refund_skill
from tests.tui.helpers import load_session
from tests.tui.strategies import PALETTE, rendered

R = ScriptedReply


def shown(path: Path) -> list[str]:
    with TraceReader(path, index=False) as reader:
        session = load_session(reader)
        return [rendered(inspect_iteration(session, it, PALETTE), width=120) for it in session.iterations]


def test_the_pointer_each_pass_saw_and_what_each_result_did(tmp_path: Path) -> None:
    model = ScriptedProvider(
        [
            R.tool_call("read_skill", {"id": "refund"}),
            R.batch(
                ScriptedCall("lookup", {"order_id": "A"}),
                ScriptedCall("skip_step", {"reason": "no \x1b[31mcard"}),
            ),
            "done",
            "done",  # the answer after the step nudge
        ]
    )
    run = record(Agent("steps").skills(refund_skill()), "Refund A", model, tmp_path)
    first, second, third, _nudged = shown(run.path)
    assert "no procedure holds the tenure" in first
    assert "refund  step 1 of 3" in second
    assert "step 1 of 3 (lookup) advanced → refund  step 2 of 3" in second
    # The skip names its step's tool and the model's reason, made inert (no raw escape reaches the screen).
    assert "step 2 of 3 (charge) skipped → refund  step 3 of 3 · skipped 2 — no " in second
    assert "\x1b" not in second
    assert "refund  step 3 of 3 · skipped 2" in third


def test_a_held_skip_says_so(tmp_path: Path) -> None:
    model = ScriptedProvider(
        [R.tool_call("read_skill", {"id": "refund"}), R.tool_call("skip_step", {"reason": "later"}), "ok"]
    )
    run = record(Agent("hold").skills(refund_skill(on_skip="hold")), "Refund A", model, tmp_path)
    assert "step 1 of 3 (lookup) skipped, held → refund  step 1 of 3 — later" in shown(run.path)[1]


def test_a_trace_without_steps_shows_no_step_rows(tmp_path: Path) -> None:
    skill = define_skill("refund", body="Refund.", tools=[tool(lookup), tool(charge)])
    model = ScriptedProvider(
        [R.tool_call("read_skill", {"id": "refund"}), R.tool_call("lookup", {"order_id": "A"}), "ok"]
    )
    run = record(Agent("plain").skills(skill), "Refund A", model, tmp_path)
    for text in shown(run.path):
        assert "steps" not in text and "step " not in text
