"""The dependency rule of ARCHITECTURE.md §1, enforced on every module's imports.

trace ← engine ← backtrack ← views ← tui / export / commands ← cli. ``fpdebug.views`` holds the
headless view models (the session behind an open trace, row facts, the query language, the pass
diff): it may import trace, engine and backtrack, and never Textual, ``fpdebug.tui``, export, commands
or the CLI, so export and report can reuse what the TUI draws. ``fpdebug.errors`` and the package
root are leaves that every layer may import. Only ``fpdebug.tui`` imports Textual; only the two live
provider modules import a model SDK.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fpdebug"

# Which fpdebug sub-packages each layer may import (besides itself and the leaves).
ALLOWED: dict[str, set[str]] = {
    "trace": set(),
    "engine": {"trace"},
    "demo": {"trace", "engine"},
    "backtrack": {"trace", "engine"},
    "views": {"trace", "engine", "backtrack"},
    "export": {"trace", "engine", "backtrack", "views"},
    # ingest reads the engine only for strength_of_move and the park card id, so an import carries
    # no second copy of either.
    "ingest": {"trace", "engine"},
    "tui": {"trace", "engine", "backtrack", "views", "demo", "export"},
    "commands": {"trace", "engine", "backtrack", "views", "demo", "export", "tui", "cli", "ingest"},
    "cli": {"commands"},
    "__main__": {"cli"},
}
LEAVES = {"errors", ""}
SDKS = {"anthropic", "openai"}
SDK_MODULES = {"fpdebug.engine.providers.anthropic", "fpdebug.engine.providers.openai"}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _dotted(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[str]:
    module = _dotted(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                found.append(".".join([*base, node.module] if node.module else base))
            elif node.module:
                found.append(node.module)
    return found


def _layer(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else ""


def _violations(module: str, imported: list[str]) -> list[str]:
    """Every import of ``module`` that breaks the dependency rule, each said as a sentence."""
    layer = _layer(module)
    found: list[str] = []
    for name in imported:
        top = name.split(".")[0]
        if top == "fpdebug":
            target = _layer(name)
            if target in LEAVES or target == layer:
                continue
            if layer not in ALLOWED:
                found.append(f"{module}: layer {layer!r} is not in the dependency table")
            elif target not in ALLOWED[layer]:
                found.append(f"{module} imports {name}: {layer} may not depend on {target}")
        elif top == "textual" or top == "textual_serve":
            if not (layer in {"tui", "commands"} and (top == "textual_serve" or layer == "tui")):
                found.append(f"{module} imports {name}: only fpdebug.tui imports textual")
        elif top in SDKS:
            if module not in SDK_MODULES:
                found.append(f"{module} imports {name}: only the live provider modules import SDKs")
        elif top == "opentelemetry" and layer not in {"export", "ingest", "commands"}:
            found.append(f"{module} imports {name}: OpenTelemetry belongs to export and ingest")
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_module_respects_the_dependency_rule(path: Path) -> None:
    assert _violations(_dotted(path), _imports(path)) == []


@pytest.mark.parametrize(
    "imported",
    [
        "textual.widgets",
        "textual_serve.server",
        "fpdebug.tui.text",
        "fpdebug.export.report",
        "fpdebug.commands.view",
        "fpdebug.cli",
    ],
)
def test_the_views_layer_may_not_import_textual_or_its_users(imported: str) -> None:
    # The rule itself is under test: a views module that drew with Textual (or reached up into a
    # layer that uses it) must be caught, or export and report could no longer reuse the views.
    assert _violations("fpdebug.views.pass_diff", [imported])


def test_the_views_layer_may_import_the_headless_layers_below_it() -> None:
    assert _violations("fpdebug.views.session", ["fpdebug.trace.model", "fpdebug.backtrack", "orjson"]) == []
    for user in ("tui", "export", "commands"):
        assert _violations(f"fpdebug.{user}.x", ["fpdebug.views.session"]) == [], user


def _loaded_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.mark.parametrize(
    "module",
    [
        "fpdebug",
        "fpdebug.trace",
        "fpdebug.engine",
        "fpdebug.backtrack",
        "fpdebug.views",
        "fpdebug.views.session",
        "fpdebug.views.pass_diff",
        "fpdebug.cli",
    ],
)
def test_headless_layers_load_neither_textual_nor_sdks(module: str) -> None:
    loaded = _loaded_after_import(module)
    assert not loaded & {"textual", "anthropic", "openai"}, loaded & {"textual", "anthropic", "openai"}
