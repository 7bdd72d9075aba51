"""What a run declares (its tools, skills and injections), and breakpoints checked against it.

A breakpoint on a tool the run cannot call or a skill its map does not have can never fire: it is
refused, with the nearest declared name (``did you mean 'issue_refund'?``), wherever it is set: on
the command line (``--break``, before the run or the screen starts, on a terminal or not) and in the
breakpoints menu. The declaration comes from the agent before its run (:meth:`Declared.of_agent`)
or from the trace's ``run_start`` (:meth:`Declared.of_start`): both read the same declarations, so
what is accepted before the run is what the menu offers during it. No Textual here.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fpdebug.errors import ConfigError
from fpdebug.tui.drive.gate import Breakpoint

if TYPE_CHECKING:
    from fpdebug.engine.agent import Agent
    from fpdebug.trace.schema import InjectionDecl, RunStartEvent, SkillMapDecl, ToolSchema

__all__ = ["Declared", "declared_nodes", "declared_tools", "did_you_mean", "parse_breakpoints"]


def declared_nodes(start: RunStartEvent | None) -> list[str]:
    """The skill map's nodes of a run (empty when it declares no map)."""
    return list(Declared.of_start(start).skills)


def declared_tools(start: RunStartEvent | None) -> list[str]:
    """Every tool a run can call: the agent's own, the ones injections bring, ``read_skill``."""
    return list(Declared.of_start(start).tools)


def did_you_mean(value: str, known: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the nearest of ``known`` (difflib), or ``""`` when none is near."""
    close = difflib.get_close_matches(value, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass(frozen=True)
class Declared:
    """The names a run declares, in declaration order."""

    tools: tuple[str, ...] = ()
    """Every tool the run can call: the agent's own, the ones injections bring, ``read_skill``."""
    skills: tuple[str, ...] = ()
    """The skill map's nodes (empty without a map)."""
    injections: tuple[str, ...] = ()
    """Every injection id (skills included)."""

    @classmethod
    def of_parts(
        cls, tools: Iterable[ToolSchema], injections: Iterable[InjectionDecl], skill_map: SkillMapDecl | None
    ) -> Declared:
        """From the declarations as ``run_start`` records them."""
        injections = list(injections)
        names = [tool.name for tool in tools]
        for injection in injections:
            names.extend(injection.tool_names)
            if injection.trigger.via_tool_name:
                names.append(injection.trigger.via_tool_name)
        if skill_map is not None:
            names.append("read_skill")
        return cls(
            tools=tuple(dict.fromkeys(names)),
            skills=tuple(dict.fromkeys(skill_map.nodes)) if skill_map is not None else (),
            injections=tuple(dict.fromkeys(injection.id for injection in injections)),
        )

    @classmethod
    def of_start(cls, start: RunStartEvent | None) -> Declared:
        """From a trace's ``run_start`` (nothing declared when there is none yet)."""
        if start is None:
            return cls()
        return cls.of_parts(start.tools, start.injections, start.skill_map)

    @classmethod
    def of_agent(cls, agent: Agent) -> Declared:
        """From an agent, before its run: what its ``run_start`` will declare.

        Raises:
            DefinitionError: The declaration is invalid.
        """
        compiled = agent._compile()  # what the run's own run_start is written from
        skill_map = agent.spec.skill_map
        return cls.of_parts(
            compiled.agent_tools,
            [injection.declaration() for injection in compiled.setup.injections],
            skill_map.declaration() if skill_map is not None else None,
        )

    def check(self, point: Breakpoint) -> Breakpoint:
        """``point`` if it can fire in this run.

        Raises:
            ConfigError: A tool the run cannot call, or a skill its map does not have; the message
                names the nearest declared one, or what is declared.
        """
        if point.kind == "tool" and point.value not in self.tools:
            raise ConfigError(
                f"unknown breakpoint 'tool:{point.value}': the run declares no tool {point.value!r}"
                f"{did_you_mean(point.value, self.tools)}; its tools: {_listed(self.tools)}"
            )
        if point.kind == "cursor" and point.value not in self.skills:
            if not self.skills:
                raise ConfigError(
                    f"unknown breakpoint 'cursor:{point.value}': the run declares no skill map, "
                    "so its cursor never moves"
                )
            what = " is an injection, not a skill of the map" if point.value in self.injections else ""
            raise ConfigError(
                f"unknown breakpoint 'cursor:{point.value}': {point.value!r}"
                f"{what or ' is not a skill of the map'}{did_you_mean(point.value, self.skills)}; "
                f"its skills: {_listed(self.skills)}"
            )
        return point

    def parse(self, spec: str) -> Breakpoint:
        """A breakpoint from its command-line form, checked against this run.

        Raises:
            ConfigError: An unknown form or kind (:meth:`Breakpoint.parse`), or a name the run does
                not declare (:meth:`check`).
        """
        return self.check(Breakpoint.parse(spec))


def parse_breakpoints(specs: Sequence[str], declared: Declared) -> list[Breakpoint]:
    """Every ``--break`` form, parsed and checked against the run (the first bad one is refused).

    Raises:
        ConfigError: One cannot fire in this run, with a "did you mean".
    """
    return [declared.parse(spec) for spec in specs]


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"
