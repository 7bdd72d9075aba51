"""Templates (docs/context-model.md §2.3): the closed ``{{fact}}`` vocabulary an injection's text may use."""

from __future__ import annotations

import re

from fpdebug.engine.injections.context import InjectionContext
from fpdebug.errors import DefinitionError

TEMPLATE_FACTS: tuple[str, ...] = ("action", "actionBudget", "actionsRemaining")
"""The closed template vocabulary (docs/context-model.md §2.3): the iteration, ``max_iterations``, what is left."""

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")


def template_names(text: str) -> tuple[str, ...]:
    """Every placeholder name in ``text``, in order of appearance, de-duplicated."""
    names: list[str] = []
    for match in _PLACEHOLDER.finditer(text):
        if match.group(1) not in names:
            names.append(match.group(1))
    return tuple(names)


def check_template(text: str) -> None:
    unknown = [name for name in template_names(text) if name not in TEMPLATE_FACTS]
    if unknown:
        raise DefinitionError(
            "unknown template name(s) "
            + ", ".join("{{" + name + "}}" for name in unknown)
            + "; the vocabulary is {{action}}, {{actionBudget}}, {{actionsRemaining}}"
        )


def _facts(ctx: InjectionContext | None) -> dict[str, int]:
    if ctx is None:
        return {}
    facts = {"action": ctx.iteration}
    if ctx.max_iterations is not None:
        facts["actionBudget"] = ctx.max_iterations
        facts["actionsRemaining"] = max(0, ctx.max_iterations - ctx.iteration)
    return facts


def missing_facts(text: str, ctx: InjectionContext | None) -> tuple[str, ...]:
    """The placeholders of ``text`` this pass cannot fill (all of them without a context)."""
    facts = _facts(ctx)
    return tuple(name for name in template_names(text) if name not in facts)


def render_template(text: str, ctx: InjectionContext | None) -> str | None:
    """Render all-or-nothing: the filled text, or ``None`` when any fact is missing."""
    facts = _facts(ctx)
    if any(name not in facts for name in template_names(text)):
        return None
    return _PLACEHOLDER.sub(lambda m: str(facts[m.group(1)]), text)
