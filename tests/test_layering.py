"""The dependency rule of ARCHITECTURE.md §1, enforced on every module's imports.

trace ← engine ← backtrack ← tui / cli. ``fpdebug.errors`` and the package root are leaves that
every layer may import. Only ``fpdebug.tui`` imports Textual; only the two live provider modules
import a model SDK.
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
    "export": {"trace", "engine", "backtrack"},
    # ingest reads the engine only for strength_of_move and the park card id, so an import carries
    # no second copy of either.
    "ingest": {"trace", "engine"},
    "tui": {"trace", "engine", "backtrack", "demo", "export"},
    "commands": {"trace", "engine", "backtrack", "demo", "export", "ingest", "tui", "cli"},
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


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_module_respects_the_dependency_rule(path: Path) -> None:
    module = _dotted(path)
    layer = _layer(module)
    for name in _imports(path):
        top = name.split(".")[0]
        if top == "fpdebug":
            target = _layer(name)
            if target in LEAVES or target == layer:
                continue
            assert layer in ALLOWED, f"{module}: layer {layer!r} is not in the dependency table"
            assert target in ALLOWED[layer], f"{module} imports {name}: {layer} may not depend on {target}"
        elif top == "textual" or top == "textual_serve":
            assert layer in {"tui", "commands"} and (top == "textual_serve" or layer == "tui"), (
                f"{module} imports {name}: only fpdebug.tui imports textual"
            )
        elif top in SDKS:
            assert module in SDK_MODULES, (
                f"{module} imports {name}: only the live provider modules import SDKs"
            )
        elif top == "opentelemetry":
            assert layer in {"export", "ingest", "commands"}, (
                f"{module} imports {name}: OpenTelemetry belongs to export and ingest"
            )


def _loaded_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.mark.parametrize(
    "module", ["fpdebug", "fpdebug.trace", "fpdebug.engine", "fpdebug.backtrack", "fpdebug.cli"]
)
def test_headless_layers_load_neither_textual_nor_sdks(module: str) -> None:
    loaded = _loaded_after_import(module)
    assert not loaded & {"textual", "anthropic", "openai"}, loaded & {"textual", "anthropic", "openai"}
