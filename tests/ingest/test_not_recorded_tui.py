"""What an imported run's source did not record is drawn as "not recorded", never as an empty pane.

An OTLP run has no passes, cursor moves, leases or engagement: each view that would show them says
"not recorded by otlp". An agentfootprint recording keeps no trigger definitions and no renewal
evidence: the Passes inspector says "trigger not recorded" and "renewal evidence not recorded".
Native traces keep their own words (the tests of tests/tui pin them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.ingest.agentfootprint import import_agentfootprint_file
from fpdebug.ingest.otlp import import_otlp
from fpdebug.trace.schema import ImportSource, InjectionDecl, TriggerDecl
from fpdebug.views.source import not_recorded_by, source_honesty, trigger_not_recorded
from tests.fakeservers import FakeResponse, FakeServer, openai_completion
from tests.tui.helpers import opened, screen_text, wait_for

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures"


async def _show(pilot: object, key: str, needle: str) -> str:
    await pilot.press(key)  # type: ignore[attr-defined]
    assert await wait_for(pilot, lambda: needle in screen_text(pilot.app)), screen_text(pilot.app)  # type: ignore
    return screen_text(pilot.app)  # type: ignore[attr-defined]


async def test_an_otlp_run_says_what_otlp_did_not_record(tmp_path: Path) -> None:
    trace = tmp_path / "run.fptrace.jsonl"
    import_otlp([FIXTURES / "otlp" / "openai_v2_latest.otlp.pb"], trace)
    async with opened(trace) as (pilot, _screen):
        passes = await _show(pilot, "1", "passes not recorded by otlp")
        assert "cursor moves not recorded by otlp" in passes
        assert "leases not recorded by otlp" in passes
        assert "engagement not recorded by otlp" in passes
        assert "no pass record in this iteration" not in passes
        leases = await _show(pilot, "2", "Leases not recorded by otlp")
        assert "No lease in this trace yet" not in leases
        skill_map = await _show(pilot, "5", "cursor moves are not recorded by otlp")
        assert "declares no skill map" not in skill_map
        await _show(pilot, "6", "Passes are not recorded by otlp")
        backtrack = await _show(pilot, "7", "imported from otlp")
        assert "not recorded by otlp" in backtrack
        assert "correlational" in backtrack


async def test_agentfootprint_triggers_show_as_not_recorded(tmp_path: Path) -> None:
    trace = tmp_path / "run.fptrace.jsonl"
    import_agentfootprint_file(FIXTURES / "agentfootprint" / "support-refund.recording.json", trace)
    async with opened(trace) as (pilot, _screen):
        passes = await _show(pilot, "1", "customer-profile")
        lines = passes.splitlines()
        at = next(index for index, line in enumerate(lines) if "customer-profile" in line)
        # "Why it rode" is beside the injection's columns, or on the row under them when narrow.
        assert "trigger not recorded" in " ".join(lines[at : at + 2])
        assert "trigger rule" not in passes
        # Passes and leases are recorded by agentfootprint: no "not recorded by" line.
        assert "not recorded by agentfootprint" not in passes


async def test_agentfootprint_engagement_says_renewal_evidence_not_recorded(tmp_path: Path) -> None:
    trace = tmp_path / "run.fptrace.jsonl"
    import_agentfootprint_file(FIXTURES / "agentfootprint" / "engagement-park.recording.json", trace)
    async with opened(trace) as (pilot, _screen):
        text = await _show(pilot, "1", "Engagement")
        assert "renewal evidence not recorded" in text
        assert "no renewal evidence on this pass" not in text


async def test_the_debugger_never_reruns_an_imported_call_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Even with the SDK's endpoint pointing at a server that would answer, the pane's ablation
    # refuses (an imported run has no scripted model) and names the shell command instead.
    trace = tmp_path / "run.fptrace.jsonl"
    import_otlp([FIXTURES / "otlp" / "openai_v2_latest.otlp.pb"], trace)
    with FakeServer(lambda request: FakeResponse(200, openai_completion(content="x"))) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
        async with opened(trace) as (pilot, _screen):
            await _show(pilot, "7", "imported from otlp")
            text = await _show(pilot, "a", "never a live one")
            assert "--ablate --provider PROVIDER --model MODEL" in text
        assert server.requests == []


def test_the_words_come_from_the_header_source() -> None:
    otlp = ImportSource(format="otlp", not_recorded=("pass", "lease_grant"))
    assert not_recorded_by(otlp, "pass") == "not recorded by otlp"
    assert not_recorded_by(otlp, "llm_call") is None
    assert not_recorded_by(None, "pass") is None
    assert source_honesty(None) is None
    assert "not recorded by otlp" in (source_honesty(otlp) or "")
    af = ImportSource(format="agentfootprint.recording.v1")
    assert not_recorded_by(af, "pass") is None
    unknown = TriggerDecl(
        kind="rule", description="not recorded: agentfootprint keeps no trigger definitions"
    )
    decl = InjectionDecl(id="x", flavor="fact", trigger=unknown, slots=["system-prompt"])
    assert trigger_not_recorded(decl)
    assert not trigger_not_recorded(decl.model_copy(update={"trigger": TriggerDecl(kind="rule")}))
    assert not trigger_not_recorded(None)
