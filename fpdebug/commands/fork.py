"""``fpdebug fork TRACE --pass N [edits…]``: rerun a recorded run from pass N with its context edited.

The calls before pass N replay from the recording; from N on the run continues on the provider
chosen (``replay`` by default, ``scripted``, or a live one with ``--live``). The new trace names its
parent in ``run_start.fork_of``. See docs/guide/fork.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fpdebug.backtrack.fork import ForkEdit

HELP = "Fork a recorded run at pass N with edits (drop/add an injection, a tool result, a lease, the model…)."


def _positive(text: str) -> int:
    from fpdebug.commands.run import positive_int

    return positive_int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``TRACE``, the fork point, the edits, the continuation and the output."""
    parser.add_argument("trace", metavar="TRACE", help="the parent trace")
    parser.add_argument(
        "--pass",
        dest="at_pass",
        type=_positive,
        required=True,
        metavar="N",
        help="the pass to fork at: iteration N of the turn, as the debugger numbers passes",
    )
    parser.add_argument(
        "--turn", type=_positive, metavar="T", help="the turn of that pass (needed when several)"
    )
    parser.add_argument("--run", dest="run_id", metavar="RUN_ID", help="the run, when TRACE holds several")
    edits = parser.add_argument_group("edits at pass N (repeatable)")
    for flag, metavar, text in (
        ("--drop-injection", "ID", "leave out an injection active at pass N, from N on"),
        ("--add-injection", "ID", "put in a declared injection not active at pass N, from N on"),
        ("--tool-result", "CALL_ID=TEXT", "replace the result of a tool call answered before pass N"),
        ("--grant-lease", "ID", "serve a declared injection at pass N, as a next-call lease would"),
        ("--revoke-lease", "ID", "end a lease granted before pass N: its injection leaves, from N on"),
    ):
        edits.add_argument(flag, action="append", default=[], metavar=metavar, help=text)
    edits.add_argument("--user-message", metavar="TEXT", help="the turn's user message, from pass N on")
    parser.add_argument(
        "--provider",
        choices=("replay", "scripted", "anthropic", "openai", "openai-responses"),
        help="the model from pass N on: replay (default: the recording answers while the requests "
        "match it), the scenario's scripted model, or a live one (with --model and --live)",
    )
    parser.add_argument("--model", metavar="M", help="the model from pass N on (live providers need one)")
    parser.add_argument("--base-url", metavar="URL", help="another endpoint for a live provider")
    parser.add_argument(
        "--live", action="store_true", help="allow a live provider to answer from pass N on (it costs money)"
    )
    parser.add_argument(
        "--module",
        metavar="PATH_OR_MODULE",
        help="the agent module the run was built from, when it is your own (as for fpdebug backtrack)",
    )
    parser.add_argument(
        "--force-module", action="store_true", help="use --module even though the trace recorded another"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="the fork's trace (default: TRACE's name + .fork-passN.fptrace.jsonl)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    parser.epilog = (
        "Exit codes: 0 the fork ran to its end, 1 it ran but failed (a replay that diverged: the trace "
        "says where), 2 it could not start (a bad edit, pass or provider; an imported run)."
    )


def edits_of(args: argparse.Namespace) -> list[ForkEdit]:
    """The edits the command line gives, in a fixed order (the order ``fork_of.edits`` records).

    Raises:
        BacktrackError: A ``--tool-result`` without ``=``.
    """
    from fpdebug.backtrack.fork import ForkEdit
    from fpdebug.errors import BacktrackError

    edits = [ForkEdit("drop-injection", target) for target in args.drop_injection]
    edits += [ForkEdit("add-injection", target) for target in args.add_injection]
    for text in args.tool_result:
        call_id, equals, value = text.partition("=")
        if not equals or not call_id:
            raise BacktrackError(
                f"--tool-result {text!r}: write it CALL_ID=TEXT (e.g. call_2='{{\"ok\": true}}')"
            )
        edits.append(ForkEdit("tool-result", call_id, value))
    edits += [ForkEdit("grant-lease", target) for target in args.grant_lease]
    edits += [ForkEdit("revoke-lease", target) for target in args.revoke_lease]
    if args.user_message is not None:
        edits.append(ForkEdit("user-message", value=args.user_message))
    if args.provider is not None:
        edits.append(ForkEdit("provider", value=args.provider))
    if args.model is not None:
        edits.append(ForkEdit("model", value=args.model))
    return edits


def default_output(trace: str, at_pass: int) -> Path:
    """``NAME.fork-passN.fptrace.jsonl`` beside the parent, never an existing file."""
    from fpdebug.backtrack.fork_place import free_fork_path

    path = Path(trace)
    return free_fork_path(path.parent, path, at_pass)


def run(args: argparse.Namespace) -> int:
    """Load the fork point, check the edits, run the fork, print how it differs from its parent."""
    from fpdebug.backtrack.fork import load_fork_point
    from fpdebug.backtrack.fork_run import run_fork
    from fpdebug.demo import recorded_module_loader
    from fpdebug.errors import ConfigError

    output = Path(args.output) if args.output else default_output(args.trace, args.at_pass)
    if output.exists() and output.stat().st_size and not args.overwrite:
        raise ConfigError(f"{output}: already exists and is not empty; pass --overwrite or choose another -o")
    point = load_fork_point(args.trace, at_pass=args.at_pass, turn=args.turn, run_id=args.run_id)
    outcome = run_fork(
        point,
        edits_of(args),
        output=output,
        load_module=recorded_module_loader(
            args.trace, module=args.module, force=args.force_module, command="fpdebug fork TRACE --pass N"
        ),
        provider=args.provider or "replay",
        model=args.model,
        base_url=args.base_url,
        live=args.live,
        overwrite=args.overwrite,
    )
    from fpdebug.views.fork_summary import outcome_lines

    for line in outcome_lines(outcome, parent=args.trace):
        print(line)
    return 0 if outcome.result.status == "completed" else 1
