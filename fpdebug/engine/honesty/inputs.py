"""The inputs layer: where each tool-call argument came from — Declare → Verify → Record → Resolve.

After the LLM call and before Route (docs/context-model.md §7.1), :func:`judge_inputs` judges the
reply's tool calls (docs/honesty.md §12.2).

**Inputs layer — Declare → Verify → Record → Resolve.** For every scalar of every tool call's
arguments (nested values by JSON path, ``$.items[0].sku``), the layer finds where the value came
from, in this order of preference:

1. a source the model *cited* and that holds the value (see "Citing a source" below);
2. a previous tool result of this run, newest first (the call id, tool, iteration, and the JSON path
   of the leaf that holds it when the result is JSON, else the text that holds it);
3. a user message of this run, newest first;
4. a value the app vouches for (an external ground, by label) — only when argument sources are armed;
5. a document the app declared (by name and JSON path) — only when argument sources are armed;
6. ``nowhere``: the model supplied it.

What "holds" means is in :mod:`fpdebug.engine.honesty.sources`: matching is lexical and
normalised (``1250`` is held by ``$1,250.00``, ``2024-05-01`` by ``May 1st, 2024``).

**Citing a source (the ``_from`` basis).** With argument sources armed, a call may carry one reserved
argument, ``"_from"`` (:data:`BASIS_KEY`): an entry, or a list of entries, each either a source
reference string (it grounds every argument of the call) or an object::

    {"arg": "$.order_id", "source": "tool:call_1", "path": "$.orders[0].id", "quote": "ORD-1234"}

``source`` is ``tool:<call id>``, ``user``, ``external:<label>`` or ``declared:<name>``; ``arg``
(default ``$``, the whole call) is the argument path the entry grounds, and covers every value under
it; ``path`` narrows the source to one JSON path; ``quote`` is text the model says it copied. An entry
is **kept** only if its source holds every value it grounds (at ``path`` when given) and contains its
quote. Otherwise it is **refused**: filtered out, named on each row it failed (``refused_reference``)
and counted in ``dropped_from``; the value is then searched for as if uncited. An entry that is not
well formed (unknown source kind, bad path, unknown key, an ``arg`` that names no value) is dropped and
counted too. A call that carries ``_from`` files one **basis row** (kept entries and the dropped
count) before its argument rows, and ``_from`` is stripped from what Route dispatches. Without
argument sources armed, ``_from`` is an ordinary argument.

**Hidden arguments.** While a tool that hides its arguments is in reach (offered on the call, or
called), no row of that visit shows a value the model wrote: argument rows carry ``value=None``,
``hidden=True``, no ``source_text`` and no ``rewritten_to``, and basis entries lose their quotes.
Where a value came from is still shown.

**Middleware rewrites.** A before-tool middleware that changes an argument is handed to the layer as
:class:`ArgumentRewrite` values (:func:`rewrites_of` computes them from the requested and the ran
arguments); the row then says ``rewritten=True`` and ``rewritten_to`` (the call ran with it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from fpdebug.engine.honesty.sources import (
    Hit,
    Source,
    parse_json_path,
    scalar_leaves,
    source_of_declared,
    source_of_ground,
    source_of_result,
    source_of_user,
)
from fpdebug.trace.schema import (
    ArgumentRow,
    BasisRow,
    DeclaredSource,
    ExternalGround,
    HonestyArms,
    ToolCallRecord,
)

__all__ = [
    "BASIS_KEY",
    "ArgumentRewrite",
    "Grounds",
    "InputsConfig",
    "InputsVerdict",
    "PriorResult",
    "SourcesInReach",
    "judge_inputs",
    "rewrites_of",
]

BASIS_KEY = "_from"
"""The reserved argument through which a model cites its sources (armed argument sources only)."""


@dataclass(frozen=True)
class PriorResult:
    """A tool result of this run the model has read, a source for later arguments.

    Attributes:
        tool_call_id: The call.
        tool_name: The tool.
        result: The result text the model read.
        iteration: The iteration whose batch ran it.
    """

    tool_call_id: str
    tool_name: str
    result: str
    iteration: int | None = None


@dataclass(frozen=True)
class SourcesInReach:
    """What the run has shown the model so far, in the order it arrived.

    Attributes:
        results: The tool results of this run, oldest first.
        user_messages: The user messages of this run, oldest first.
    """

    results: tuple[PriorResult, ...] = ()
    user_messages: tuple[str, ...] = ()


@dataclass(frozen=True)
class Grounds:
    """The app's own sources, declared on the agent (recorded in ``run_start.honesty``).

    Attributes:
        external_grounds: Values the app vouches for, each with its label.
        declared_sources: Named documents the app declares as argument sources.
    """

    external_grounds: tuple[ExternalGround, ...] = ()
    declared_sources: tuple[DeclaredSource, ...] = ()

    @classmethod
    def from_arms(cls, arms: HonestyArms | None) -> Grounds:
        """The grounds a run recorded.

        Args:
            arms: ``run_start.honesty``.

        Returns:
            Its external grounds and declared sources.
        """
        if arms is None:
            return cls()
        return cls(tuple(arms.external_grounds or ()), tuple(arms.declared_sources or ()))

    def sources(self) -> list[Source]:
        """The grounds as sources: external grounds, then declared sources, in declaration order."""
        grounds = [source_of_ground(g) for g in self.external_grounds]
        return grounds + [source_of_declared(d) for d in self.declared_sources]


@dataclass(frozen=True)
class InputsConfig:
    """How the agent armed the inputs layer (build-time facts, all recorded in ``run_start``).

    Attributes:
        argument_sources: Declared sources are armed: the ``_from`` basis is read and the grounds
            are searched.
        grounds: The app's external grounds and declared sources.
        hidden_argument_tools: Tools that hide their arguments.
        basis_rows: File a basis row for a call that carries ``_from`` (fpdebug's ledger is the
            trace, so its loop passes ``True``); when ``False`` the dropped count rides the call's
            first argument row instead.
    """

    argument_sources: bool = False
    grounds: Grounds = field(default_factory=Grounds)
    hidden_argument_tools: frozenset[str] = frozenset()
    basis_rows: bool = True

    @classmethod
    def from_arms(cls, arms: HonestyArms | None) -> InputsConfig:
        """The configuration a run recorded in ``run_start.honesty``.

        Args:
            arms: The recorded arms.

        Returns:
            The inputs layer's configuration.
        """
        if arms is None:
            return cls()
        return cls(
            argument_sources=arms.argument_sources,
            grounds=Grounds.from_arms(arms),
            hidden_argument_tools=frozenset(arms.hidden_argument_tools or ()),
        )


@dataclass(frozen=True)
class ArgumentRewrite:
    """One middleware decision: an argument the call ran with differs from what the model asked.

    Attributes:
        tool_call_id: The call.
        path: The argument's JSON path.
        original: The value the model supplied (``None`` when the middleware added the argument).
        rewritten_to: The value the call ran with (``None`` when removed).
        removed: The middleware removed the argument.
    """

    tool_call_id: str
    path: str
    original: object = None
    rewritten_to: object = None
    removed: bool = False


def _leaf_map(args: Mapping[str, object]) -> dict[str, object]:
    return {leaf.path: leaf.value for leaf in scalar_leaves(dict(args)) if leaf.path is not None}


def rewrites_of(
    tool_call_id: str, requested: Mapping[str, object], ran: Mapping[str, object]
) -> list[ArgumentRewrite]:
    """The middleware decisions that turn the requested arguments into the ones the call ran with.

    Args:
        tool_call_id: The call.
        requested: The arguments the model asked for (without ``_from``).
        ran: The arguments the call ran with.

    Returns:
        One rewrite per scalar path whose value changed, was added or was removed, in the
        requested arguments' order, then the added paths in the ran arguments' order.
    """
    before, after = _leaf_map(requested), _leaf_map(ran)
    changes: list[ArgumentRewrite] = []
    for path, old in before.items():
        if path not in after:
            changes.append(ArgumentRewrite(tool_call_id, path, old, None, removed=True))
        elif type(after[path]) is not type(old) or after[path] != old:
            changes.append(ArgumentRewrite(tool_call_id, path, old, after[path]))
    changes.extend(ArgumentRewrite(tool_call_id, p, None, v) for p, v in after.items() if p not in before)
    return changes


@dataclass(frozen=True)
class InputsVerdict:
    """What one inputs layer visit returns.

    Attributes:
        rows: The basis and argument rows for ONE ``finding`` event (empty: write nothing).
        dispatch: Resolve: for each call id, the arguments Route may dispatch (``_from`` stripped).
        resolved: Resolve, call by call: the calls Route may dispatch, in the reply's order, each with
            its dispatch arguments (a reply that repeats a call id keeps each call's own arguments,
            which ``dispatch`` cannot).
    """

    rows: tuple[ArgumentRow | BasisRow, ...]
    dispatch: Mapping[str, dict[str, object]]
    resolved: tuple[ToolCallRecord, ...] = ()


@dataclass(frozen=True)
class _Entry:
    """One well-formed ``_from`` entry."""

    arg: str
    source: str
    path: str | None
    quote: str | None
    covers: tuple[str, ...]

    def render(self, *, quotes: bool) -> str:
        text = f"{self.arg} <- {self.reference()}"
        if self.quote is not None and quotes:
            text += f' "{self.quote}"'
        return text

    def reference(self) -> str:
        return self.source if self.path is None else f"{self.source} at {self.path}"


_ENTRY_KEYS = frozenset({"arg", "source", "path", "quote"})


def _well_formed_source(ref: object) -> bool:
    if not isinstance(ref, str):
        return False
    if ref == "user":
        return True
    kind, sep, rest = ref.partition(":")
    return bool(sep and rest) and kind in ("tool", "external", "declared")


def _covers(arg: str, leaf_path: str) -> bool:
    return leaf_path == arg or leaf_path.startswith(arg + ".") or leaf_path.startswith(arg + "[")


def _parse_basis(raw: object, leaf_paths: Sequence[str]) -> tuple[list[_Entry], int]:
    """Read ``_from``: the well-formed entries, and how many were dropped as malformed."""
    items = raw if isinstance(raw, list) else [raw]
    entries: list[_Entry] = []
    dropped = 0
    for item in items:
        if isinstance(item, str):
            item = {"source": item}
        if not isinstance(item, dict) or not set(item) <= _ENTRY_KEYS:
            dropped += 1
            continue
        arg, source = item.get("arg", "$"), item.get("source")
        path, quote = item.get("path"), item.get("quote")
        if not (
            isinstance(arg, str)
            and parse_json_path(arg) is not None
            and isinstance(source, str)
            and _well_formed_source(source)
            and (path is None or (isinstance(path, str) and parse_json_path(path) is not None))
            and (quote is None or isinstance(quote, str))
        ):
            dropped += 1
            continue
        covers = tuple(p for p in leaf_paths if _covers(arg, p))
        if not covers:
            dropped += 1
            continue
        entries.append(_Entry(arg, source, path, quote, covers))
    return entries, dropped


def _cited_sources(ref: str, corpus: Sequence[Source]) -> list[Source]:
    """The sources a reference names (``user`` names every user message), newest first."""
    return [s for s in corpus if s.ref == ref]


def _verify(
    entry: _Entry, values: Mapping[str, object], corpus: Sequence[Source]
) -> dict[str, tuple[Source, Hit]] | None:
    """The hits that make an entry kept, or ``None`` when it is refused."""
    for source in _cited_sources(entry.source, corpus):
        if entry.quote is not None and not source.contains_text(entry.quote):
            continue
        hits: dict[str, tuple[Source, Hit]] = {}
        for leaf_path in entry.covers:
            hit = source.find(values[leaf_path], path=entry.path, cited=True)
            if hit is None:
                break
            hits[leaf_path] = (source, hit)
        else:
            return hits
    return None


@dataclass(frozen=True)
class _Basis:
    """What Verify made of a call's ``_from`` entries."""

    kept: list[_Entry]
    grounded: dict[str, tuple[Source, Hit]]
    """For each argument path a kept entry covers, the first source and hit that hold it."""
    refused: dict[str, list[str]]
    """For each argument path, the references of the refused entries that covered it."""
    refused_count: int


def _verify_basis(
    entries: Sequence[_Entry], values: Mapping[str, object], corpus: Sequence[Source]
) -> _Basis:
    """Verify: a kept entry grounds its values; a refused one is named on each value it failed."""
    grounded: dict[str, tuple[Source, Hit]] = {}
    refused: dict[str, list[str]] = {}
    kept: list[_Entry] = []
    refused_count = 0
    for entry in entries:
        hits = _verify(entry, values, corpus)
        if hits is None:
            refused_count += 1
            for leaf_path in entry.covers:
                refused.setdefault(leaf_path, []).append(entry.reference())
            continue
        kept.append(entry)
        for leaf_path, found in hits.items():
            grounded.setdefault(leaf_path, found)
    return _Basis(kept, grounded, refused, refused_count)


def _search(value: object, corpus: Sequence[Source]) -> tuple[Source, Hit] | None:
    for source in corpus:
        hit = source.find(value)
        if hit is not None:
            return source, hit
    return None


_SNIPPET_LIMIT = 200


def _snippet(text: str) -> str:
    return text if len(text) <= _SNIPPET_LIMIT else text[: _SNIPPET_LIMIT - 1] + "…"


def _argument_row(
    call: ToolCallRecord,
    path: str,
    value: object,
    found: tuple[Source, Hit] | None,
    *,
    refused: list[str],
    rewrite: ArgumentRewrite | None,
    hidden: bool,
) -> ArgumentRow:
    fields: dict[str, object] = {"source": "nowhere"}
    if found is not None:
        source, hit = found
        fields["source"] = source.kind
        if source.kind == "tool-result":
            fields.update(
                source_tool_call_id=source.tool_call_id,
                source_tool_name=source.tool_name,
                source_iteration=source.iteration,
            )
        if source.kind in ("external", "declared"):
            fields["label"] = source.label
        if source.is_json:
            fields["source_path"] = hit.path
        elif not hidden:
            fields["source_text"] = _snippet(hit.text)
    if rewrite is not None:
        fields["rewritten"] = True
        if not hidden and not rewrite.removed:
            fields["rewritten_to"] = rewrite.rewritten_to
    fields.update(
        tool_call_id=call.id,
        tool_name=call.name,
        path=path,
        value=None if hidden else value,
        refused_reference=", ".join(refused) or None,
        hidden=hidden,
    )
    return ArgumentRow.model_validate(fields)


def _corpus(sources: SourcesInReach, config: InputsConfig) -> list[Source]:
    corpus = [
        source_of_result(r.tool_call_id, r.tool_name, r.iteration, r.result)
        for r in reversed(sources.results)
    ]
    corpus.extend(source_of_user(m) for m in reversed(sources.user_messages))
    if config.argument_sources:
        corpus.extend(config.grounds.sources())
    return corpus


def judge_inputs(
    calls: Sequence[ToolCallRecord],
    sources: SourcesInReach,
    *,
    config: InputsConfig | None = None,
    tools_in_reach: Collection[str] = (),
    rewrites: Sequence[ArgumentRewrite] = (),
    tools_off: bool = False,
) -> InputsVerdict:
    """The inputs layer over one LLM reply's tool calls: Declare → Verify → Record → Resolve.

    The module docstring has the rules (preference order, the ``_from`` basis, hidden arguments,
    rewrites).

    A call whose arguments did not parse (only ``raw_args``) holds no value to trace: it files no
    argument row.

    Args:
        calls: The tool calls the reply asked for, in order (their ``args`` as the model wrote them).
        sources: The tool results and user messages of this run the model has read, oldest first.
        config: How the layer is armed (argument sources, grounds, hiding tools).
        tools_in_reach: The names of the tools offered on this LLM call.
        rewrites: Middleware decisions for these calls, when they are known before dispatch.
        tools_off: The evidence gate's revision turned the tools off: Route runs none of the calls,
            so the layer asks about none of them.

    Returns:
        The rows for one ``finding`` event and the arguments Route may dispatch.
    """
    config = config or InputsConfig()
    if tools_off:
        return InputsVerdict((), {})
    corpus = _corpus(sources, config)
    hidden = bool(config.hidden_argument_tools & ({*tools_in_reach} | {c.name for c in calls}))
    by_path = {(r.tool_call_id, r.path): r for r in rewrites}
    rows: list[ArgumentRow | BasisRow] = []
    dispatch: dict[str, dict[str, object]] = {}
    resolved: list[ToolCallRecord] = []
    for call in calls:
        declares = config.argument_sources and BASIS_KEY in call.args
        body = {k: v for k, v in call.args.items() if not (declares and k == BASIS_KEY)}
        dispatch[call.id] = body
        resolved.append(call.model_copy(update={"args": body}) if declares else call)
        values = _leaf_map(body)
        entries, dropped = _parse_basis(call.args.get(BASIS_KEY), list(values)) if declares else ([], 0)
        basis = _verify_basis(entries, values, corpus)
        dropped += basis.refused_count
        grounded, refused, kept = basis.grounded, basis.refused, basis.kept
        # Record.
        call_rows = [
            _argument_row(
                call,
                path,
                value,
                grounded.get(path) or _search(value, corpus),
                refused=refused.get(path, []),
                rewrite=by_path.get((call.id, path)),
                hidden=hidden,
            )
            for path, value in values.items()
        ]
        if declares and (config.basis_rows or not call_rows):
            entries_kept = [e.render(quotes=not hidden) for e in kept]
            rows.append(
                BasisRow(
                    tool_call_id=call.id, tool_name=call.name, from_entries=entries_kept, dropped_from=dropped
                )
            )
        elif declares:
            call_rows[0] = call_rows[0].model_copy(update={"dropped_from": dropped})
        rows.extend(call_rows)
    return InputsVerdict(tuple(rows), dispatch, tuple(resolved))
