"""Files fpdebug writes without being asked by name never follow a link, and no mode is changed
on a file fpdebug did not create.

The backtrack sidecar sits beside the trace under a predictable name, so anyone who can write the
trace's directory can plant ``TRACE.backtrack.jsonl -> victim``: on the old code ``backtrack``
appended its JSON to the victim and made it ``0600``, and a dangling link made the code create the
link's target. An explicit ``-o`` output is the user's own choice and is written where it points,
but an existing file is replaced by a new ``0600`` one rather than ``chmod``-ed.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from fpdebug.backtrack.session import explain
from fpdebug.backtrack.sidecar import SidecarWriter, sidecar_path_for
from fpdebug.cli import main
from fpdebug.errors import BacktrackError
from tests.export.otlp_helpers import SAMPLES

SAMPLE = next(path for path in SAMPLES if path.name.startswith("support."))


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return Path(shutil.copy(SAMPLE, tmp_path / "support.fptrace.jsonl"))


def test_a_planted_sidecar_link_is_refused_and_its_target_untouched(trace: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    victim.chmod(0o644)
    sidecar_path_for(trace).symlink_to(victim)
    report = explain(trace).report
    with pytest.raises(BacktrackError, match="symbolic link"):
        SidecarWriter(trace, report)
    assert victim.read_bytes() == b"precious\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_a_dangling_sidecar_link_does_not_create_its_target(trace: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "created-by-link.txt"
    target.parent.mkdir()
    sidecar_path_for(trace).symlink_to(target)
    with pytest.raises(BacktrackError, match="symbolic link"):
        SidecarWriter(trace, explain(trace).report)
    assert not target.exists()


def test_the_backtrack_command_refuses_a_planted_link_clearly(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    sidecar_path_for(trace).symlink_to(victim)
    assert main(["backtrack", str(trace)]) == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and "Traceback" not in err
    assert victim.read_bytes() == b"precious\n"


def test_an_existing_sidecar_keeps_its_mode_and_a_new_one_is_0600(trace: Path) -> None:
    sidecar = sidecar_path_for(trace)
    report = explain(trace).report
    old_umask = os.umask(0)
    try:
        SidecarWriter(trace, report)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600
    sidecar.chmod(0o640)  # the owner's own choice
    SidecarWriter(trace, report)
    assert stat.S_IMODE(sidecar.stat().st_mode) == 0o640
    assert sidecar.read_bytes().count(b'"record":"report"') == 2


def test_an_existing_output_file_is_replaced_not_chmodded(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "existing.md"
    existing.write_text("older\n")
    existing.chmod(0o644)
    linked = tmp_path / "linked.md"
    os.link(existing, linked)  # a second name for the old file: it must keep its mode and content
    assert main(["report", str(trace), "-o", str(existing)]) == 0
    capsys.readouterr()
    assert stat.S_IMODE(existing.stat().st_mode) == 0o600
    assert existing.read_text().startswith("#")
    assert stat.S_IMODE(linked.stat().st_mode) == 0o644
    assert linked.read_text() == "older\n"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_overwriting_a_trace_changes_its_content_not_its_mode(tmp_path: Path, mode: int) -> None:
    # The trace writer used to fchmod an existing file to 0600 on overwrite=True.
    from fpdebug.trace.writer import TraceWriter

    path = tmp_path / "shared.fptrace.jsonl"
    path.write_bytes(b"older run\n")
    path.chmod(mode)
    before = path.stat()
    TraceWriter.create(path, overwrite=True).close()
    after = path.stat()
    assert stat.S_IMODE(after.st_mode) == mode
    assert (after.st_ino, after.st_uid, after.st_gid) == (before.st_ino, before.st_uid, before.st_gid)
    assert path.read_bytes().startswith(b'{"kind":"trace_header"')


def test_an_existing_empty_trace_keeps_its_mode_and_a_new_one_is_0600(tmp_path: Path) -> None:
    from fpdebug.trace.writer import TraceWriter

    existing, new = tmp_path / "empty.fptrace.jsonl", tmp_path / "new.fptrace.jsonl"
    existing.touch()
    existing.chmod(0o664)
    old_umask = os.umask(0)
    try:
        TraceWriter.create(existing).close()
        TraceWriter.create(new).close()
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(existing.stat().st_mode) == 0o664
    assert stat.S_IMODE(new.stat().st_mode) == 0o600


def test_a_trace_through_a_dangling_link_is_created_0600(tmp_path: Path) -> None:
    # O_EXCL refuses any link; the writer then creates the explicit path's target as before, as its own.
    from fpdebug.trace.writer import TraceWriter

    target = tmp_path / "real.fptrace.jsonl"
    link = tmp_path / "link.fptrace.jsonl"
    link.symlink_to(target)
    TraceWriter.create(link).close()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_bytes().startswith(b'{"kind":"trace_header"')
