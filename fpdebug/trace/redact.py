"""Secrets out of everything fpdebug writes: the :class:`Redactor` and the process's default one.

A trace records prompts, replies, tool arguments and tool results verbatim, so a key a tool echoed, a
header a provider error quoted or a password a user pasted would reach the disk with them. The trace
writer (and every sidecar and export) runs each serialised record through a :class:`Redactor`
before the bytes leave the process; what it matches becomes ``[redacted]``.

What is matched by default (:data:`BUILTIN_RULES`):

- keys by their shape: Anthropic ``sk-ant-…``, OpenAI ``sk-proj-…`` / ``sk-svcacct-…`` /
  ``sk-admin-…`` and other ``sk-…`` keys of 20 or more characters with a digit, AWS access key ids
  (``AKIA…``, ``ASIA…``), GitHub tokens (``ghp_…``, ``github_pat_…``), Google API keys
  (``AIza…``), Slack tokens (``xoxb-…``);
- values by their context: the token after ``Bearer``; the value of an ``Authorization`` header
  (after its scheme); the value after a name such as ``api_key``, ``apiKey``, ``x-api-key``,
  ``OPENAI_API_KEY``, ``secret_access_key``, ``access_token``, ``client_secret``, ``password`` or
  ``token`` followed by ``:`` or ``=`` (quoted or not, as text, as a JSON key, as a header). The
  names are recognised in lower case, Title case and UPPER case (``apiKey`` and ``API_KEY`` too);
- the literal values of ``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY`` and of every environment variable
  named in ``FPDEBUG_REDACT_ENV`` (comma-separated) or passed as ``env_vars``; values shorter than
  :data:`MIN_LITERAL` characters are ignored (redacting every ``abc`` would destroy the trace);
- user patterns: ``FPDEBUG_REDACT_PATTERNS`` (one regular expression per line) and ``patterns``.
  A pattern with a group named ``secret`` redacts that group only, otherwise the whole match.

**JSON stays JSON.** :meth:`Redactor.redact_json` changes only the content of JSON strings, and
the bare value (a number, ``true``, ``false``, ``null``) of a secret-named key, which becomes the
string ``"[redacted]"`` as a whole token (``{"password": 4821}`` → ``{"password": "[redacted]"}``;
inside a JSON text held in a string, quoted the way its key is, ``\"[redacted]\"``). The
built-in secrets never contain a quote or a backslash and never start inside an escape, so they
are replaced in place; a literal or user pattern whose match would touch the JSON syntax (a quote,
an escape, a number) is applied to each decoded string instead, which is then re-encoded. Every
changed line is parsed again: should it not parse (it never should), the line is redacted the
conservative way instead (decoded, every string and every value of a secret-named key redacted,
re-encoded), so a redacted line always parses, stays one line, and no record is lost.

**Cost.** A line with nothing that looks like a secret costs one pass of a Rust literal matcher
(pydantic-core's regex engine): about 0.3 µs per KB. Only lines that contain a trigger (``sk-``,
``Bearer``, ``key:``…) are examined in detail. User patterns run with Python's ``re`` on every line.

**Not a guarantee.** Redaction is pattern-based: a secret with no recognisable shape, no telling
context and no configured value (a password in free prose, a key split across two strings) is
written as it is. Configure ``FPDEBUG_REDACT_ENV`` / ``FPDEBUG_REDACT_PATTERNS`` for your own, and
keep traces private (the writer creates them ``0600``).
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypeVar

import orjson
from pydantic_core import SchemaValidator, core_schema

from fpdebug.errors import ConfigError

__all__ = [
    "BUILTIN_RULES",
    "DEFAULT_SECRET_ENV_VARS",
    "ENV_LIST_VAR",
    "MIN_LITERAL",
    "PATTERNS_ENV_VAR",
    "REPLACEMENT",
    "Redactor",
    "Rule",
    "default_redactor",
]

REPLACEMENT = "[redacted]"
"""What a secret becomes (no quote, no backslash: safe inside any JSON string)."""

PATTERNS_ENV_VAR = "FPDEBUG_REDACT_PATTERNS"
"""Extra regular expressions, one per line; a group named ``secret`` limits what is replaced."""

ENV_LIST_VAR = "FPDEBUG_REDACT_ENV"
"""Names of environment variables whose values are redacted wherever they appear (comma-separated)."""

DEFAULT_SECRET_ENV_VARS: tuple[str, ...] = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
"""Environment variables whose values are always redacted."""

MIN_LITERAL = 8
"""Shorter configured values are not redacted (they would match ordinary text everywhere)."""

# ----------------------------------------------------------------------------------------------
# The built-in rules
#
# The text they run over is usually a serialised JSON line, where a newline inside a string is the
# two characters ``\n`` and a quote inside a string is ``\"``. Separators accept both forms, so a
# header inside a JSON string inside a JSON line (``{\"authorization\": \"Bearer …\"}``) is found as
# well as one in plain text. No secret group may contain a quote or a backslash, and none may start
# right after a backslash: that is what makes in-place replacement safe for JSON.

_SPACE = r"(?:[ \t\r\n]|\\[nrt])"
_QUOTE = r"(?:\\*[\"'])?"  # a quote, possibly escaped at any depth; never a lone backslash
_ASSIGN = rf"{_QUOTE}{_SPACE}*[:=]{_SPACE}*{_QUOTE}{_SPACE}*"
_VALUE = r"[^\s\"'\\,;&<>(){}\[\]]{4,}"
_SUFFIXES = ("\\", '"', "'", " ", "\t", "\r", "\n", ":", "=")  # what may follow a name before its value


def _casings(*words: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for w in words for v in (w, w.title(), w.upper())))


Boundary = Literal["token", "word", "name"]
"""How a rule checks what precedes its anchor: not ``[A-Za-z0-9_-]`` (``token``), not ``[A-Za-z0-9]``
(``word``), or the anchor ends a name whose start is found by scanning back (``name``)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One built-in kind of secret: where to look (anchors) and what to replace (the ``s`` group)."""

    name: str
    """What it finds (for documentation and tests)."""
    anchors: tuple[str, ...]
    """Exact substrings the secret or its context starts with (or, for ``name``, ends its name with)."""
    pattern: str
    """Matched at the anchor (or at the name's start); group ``s`` is the secret."""
    boundary: Boundary
    """How the text before the anchor is checked."""
    triggers: tuple[str, ...] = ()
    """Literals of the fast pre-check; the anchors themselves when empty."""

    def trigger_literals(self) -> tuple[str, ...]:
        """The literals that must occur in a text for this rule to match anything in it."""
        return self.triggers or self.anchors


_NAMES = _casings("key", "token", "secret", "password", "passwd")

BUILTIN_RULES: tuple[Rule, ...] = (
    Rule(
        "provider key (sk-…)",
        ("sk-",),
        r"(?P<s>sk-(?:(?:ant|proj|svcacct|admin)-[A-Za-z0-9_-]{16,}|(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}))",
        "token",
    ),
    Rule("AWS access key id", ("AKIA", "ASIA"), r"(?P<s>(?:AKIA|ASIA)[A-Z0-9]{16})(?![A-Za-z0-9])", "word"),
    Rule(
        "GitHub token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"(?P<s>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
        "word",
    ),
    Rule("Google API key", ("AIza",), r"(?P<s>AIza[0-9A-Za-z_-]{35})", "word"),
    Rule("Slack token", tuple(f"xox{c}-" for c in "abposr"), r"(?P<s>xox[abposr]-[A-Za-z0-9-]{10,})", "word"),
    Rule(
        "Authorization header value",
        _casings("authorization"),
        # The scheme is possessive: "Bearer [redacted]" must not make "Bearer" the value.
        rf"(?i:authorization){_ASSIGN}(?:(?i:bearer|basic|token|bot|apikey|key){_SPACE}+)?+(?P<s>{_VALUE})",
        "word",
        tuple(a + s for a in _casings("authorization") for s in _SUFFIXES),
    ),
    Rule(
        "Bearer token",
        _casings("bearer"),
        rf"(?i:bearer){_SPACE}+(?P<s>(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{{8,}})",
        "word",
        tuple(a + s for a in _casings("bearer") for s in ("\\", " ", "\t", "\r", "\n")),
    ),
    Rule(
        "value of a secret-named field (api_key=…, \"password\": …)",
        _NAMES,
        rf"{_ASSIGN}(?P<s>{_VALUE})",
        "name",
        tuple(a + s for a in _NAMES for s in _SUFFIXES),
    ),
)
"""The built-in rules, in the order they are tried."""

# A name qualifies when it ends like a secret's name: api keys and tokens, secret/access/private
# keys, access/auth/refresh/session/id tokens, anything ending in secret or password, or plain
# ``token``. A bare ``key`` (a lookup key) or ``tokens`` (a count) does not.
_SECRET_NAME = re.compile(
    r"(?i).*(?:api[-_]?(?:key|token|secret)|secret[-_]?(?:access[-_]?)?key|access[-_]?key(?:[-_]?secret)?"
    r"|private[-_]?key|(?:access|auth|refresh|session|bearer|oauth|id)[-_]?token|secret|password|passwd)"
    r"|token"
)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_MAX_NAME = 64
_V = TypeVar("_V")


def _rust_escape(text: str) -> str:
    # Every character that is not a letter, digit or underscore as \x{…}: valid in Rust's regex
    # syntax whatever it is, and never special.
    return "".join(c if c.isalnum() and c.isascii() or c == "_" else f"\\x{{{ord(c):x}}}" for c in text)


def _literal_matcher(literals: Iterable[str]) -> Callable[[str | bytes], bool]:
    """A fast "does the text contain any of these literals" test (Rust, via pydantic-core)."""
    unique = sorted(set(literals), key=len, reverse=True)
    if not unique:
        return lambda text: False
    pattern = "|".join(_rust_escape(literal) for literal in unique)
    validator = SchemaValidator(core_schema.str_schema(pattern=pattern, regex_engine="rust-regex"))
    return validator.isinstance_python


_UTF8 = SchemaValidator(core_schema.str_schema(regex_engine="rust-regex")).isinstance_python
_COMPILED = tuple(re.compile(rule.pattern) for rule in BUILTIN_RULES)
_RULE_MATCHERS = tuple(_literal_matcher(rule.trigger_literals()) for rule in BUILTIN_RULES)

# A JSON string token: a quote, then characters other than quote and backslash, or escapes.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# A bare JSON value a secret-named key may hold: it is redacted as a whole token.
_BARE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")


class Redactor:
    """Replaces secrets with ``[redacted]`` in plain text and in JSON text (keeping it valid JSON).

    Immutable and thread-safe. Build one from the environment with :meth:`from_env` (what the trace
    writer does by default), or directly to choose what is redacted.

    Args:
        patterns: Extra regular expressions (strings or compiled); a group named ``secret`` limits
            the replacement to that group.
        secrets: Literal values to redact wherever they appear (values shorter than
            :data:`MIN_LITERAL` characters are ignored).
        builtin: Apply :data:`BUILTIN_RULES` (the default).
        replacement: What a secret becomes; must not contain a quote or a backslash.

    Raises:
        ConfigError: A pattern is not a valid regular expression or matches the empty string, or
            the replacement contains a quote or a backslash.

    Example::

        redactor = Redactor(patterns=[r"cust-[0-9]{6}"])
        redactor.redact("Authorization: Bearer abc.def.123")  # 'Authorization: Bearer [redacted]'
    """

    __slots__ = ("_builtin", "_forms", "_literals", "_might_match", "_patterns", "replacement")

    def __init__(
        self,
        *,
        patterns: Iterable[str | re.Pattern[str]] = (),
        secrets: Iterable[str] = (),
        builtin: bool = True,
        replacement: str = REPLACEMENT,
    ) -> None:
        if '"' in replacement or "\\" in replacement or not replacement:
            raise ConfigError(
                f"a redaction replacement must be non-empty, without quotes or backslashes: {replacement!r}"
            )
        self.replacement = replacement
        """What a secret becomes."""
        self._builtin = builtin
        self._patterns: tuple[re.Pattern[str], ...] = tuple(_compile_user(p) for p in patterns)
        kept = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_LITERAL}
        values = sorted(kept, key=len, reverse=True)
        self._literals: re.Pattern[str] | None = (
            re.compile("|".join(re.escape(v) for v in values)) if values else None
        )
        # The shapes a value takes inside a JSON string (escaped quotes, \uXXXX): found in a JSON
        # text, they send it through the per-string path, where the decoded value matches.
        self._forms: tuple[str, ...] = tuple(
            {f for v in values for f in (_json_body(v, ascii=False), _json_body(v, ascii=True)) if f != v}
        )
        triggers = [lit for rule in BUILTIN_RULES for lit in rule.trigger_literals()] if builtin else []
        self._might_match = _literal_matcher([*triggers, *values, *self._forms])

    # ------------------------------------------------------------------------------------------
    # Construction

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        patterns: Iterable[str | re.Pattern[str]] = (),
        env_vars: Iterable[str] = (),
    ) -> Redactor:
        """The built-in rules plus what the environment configures (cached per configuration).

        Args:
            environ: The environment to read (``os.environ`` by default).
            patterns: Extra patterns beside ``FPDEBUG_REDACT_PATTERNS``.
            env_vars: Extra variable names beside :data:`DEFAULT_SECRET_ENV_VARS` and
                ``FPDEBUG_REDACT_ENV``.

        Raises:
            ConfigError: A configured pattern is not a valid regular expression.
        """
        env = os.environ if environ is None else environ
        names = [*DEFAULT_SECRET_ENV_VARS, *_names(env.get(ENV_LIST_VAR, "")), *env_vars]
        values = tuple(env[name] for name in dict.fromkeys(names) if env.get(name))
        configured = tuple(line for line in env.get(PATTERNS_ENV_VAR, "").splitlines() if line.strip())
        extra = tuple(patterns)
        if extra:
            return cls(patterns=(*configured, *extra), secrets=values)
        return _cached(configured, values)

    @classmethod
    def off(cls) -> Redactor:
        """A redactor that changes nothing (for benchmarks and traces of synthetic data)."""
        return cls(builtin=False)

    @property
    def active(self) -> bool:
        """Whether this redactor can change anything at all."""
        return self._builtin or bool(self._patterns) or self._literals is not None

    def __repr__(self) -> str:
        count = 0 if self._literals is None else self._literals.pattern.count("|") + 1
        # Never the values themselves: a repr ends up in logs.
        return f"Redactor(builtin={self._builtin}, patterns={len(self._patterns)}, secrets={count})"

    # ------------------------------------------------------------------------------------------
    # Redacting

    def redact(self, text: str) -> str:
        """Redact plain text (a message, a Markdown report, an error).

        Args:
            text: Any text.

        Returns:
            The text with every match replaced (the same object when nothing matched).
        """
        if not self._patterns and not self._might_match(text) and (text.isascii() or _UTF8(text)):
            return text
        spans = self._builtin_spans(text) + self._other_spans(text)
        return _replace(text, spans, self.replacement) if spans else text

    def redact_json(self, text: str) -> str:
        """Redact a JSON document (a trace line, an export) so that it stays the same valid JSON.

        Only the content of strings (keys and values) changes, and the bare value of a secret-named
        key (``"token": null``, ``"password": 4821``), which becomes the string ``"[redacted]"``;
        structure, key order, escaping style and layout are kept. A changed text is parsed again;
        should it not parse while the input did, the input is redacted value by value and
        re-encoded instead (compact), so the result is always valid JSON.

        Args:
            text: A JSON text. Text that is not JSON is redacted as plain text.

        Returns:
            The redacted text (the same object when nothing matched).
        """
        if not self._patterns and not self._might_match(text) and (text.isascii() or _UTF8(text)):
            return text
        return self._checked(text, self._redact_json(text))

    def _redact_json(self, text: str) -> str:
        spans = self._builtin_spans(text)
        if spans:
            text = _replace(text, spans, self.replacement, _bare_replacements(text, spans, self.replacement))
        if self._literals is None and not self._patterns:
            return text
        others = self._other_spans(text)
        has_form = any(form in text for form in self._forms)
        if not others and not has_form:
            return text
        if not has_form and all('"' not in text[a:b] and "\\" not in text[a:b] for a, b in others):
            candidate = _replace(text, others, self.replacement)
            if _json_state(candidate) == "ok":
                return candidate  # every replacement fell inside a string, clear of escapes
        if _json_state(text) == "invalid":
            return self.redact(text)
        # Too deep to parse, or a match that touches the syntax: work string by string (no recursion).
        return _JSON_STRING.sub(self._redact_string_token, text)

    def _checked(self, original: str, redacted: str) -> str:
        # The safety net: a line that parsed must still parse. Paid only by lines that changed.
        if redacted is original or _parses(redacted) is not False:
            return redacted
        if _parses(original) is False:
            return redacted  # not JSON to begin with: redacted as plain text
        return self._conservative(original)

    def _conservative(self, text: str) -> str:
        try:
            value = json.loads(text)
        except RecursionError:
            # Too deep to decode: strings only, one token at a time (cannot break the syntax).
            return _JSON_STRING.sub(self._redact_string_token, text)
        return json.dumps(self.redact_value(value), ensure_ascii=text.isascii(), separators=(",", ":"))

    def redact_value(self, value: _V) -> _V:
        """Redact every string in a JSON-like value (dicts, lists and tuples walked, keys included).

        For values about to be serialised by someone else (span attributes, report fields). A string
        under a key is judged with its key, as ``key: value`` would be in text (so the value of
        ``{"api_key": …}`` or ``{"Authorization": "Bearer …"}`` is found as in a JSON line); so is
        a number, boolean or ``None`` under a key, which becomes the string ``"[redacted]"`` when
        it is a secret's (``{"password": 4821}``), as :meth:`redact_json` does in JSON text.

        Args:
            value: A string, a container of values, or anything else (returned as it is).

        Returns:
            A value of the same shape (the same object when nothing changed).
        """
        if isinstance(value, str):
            return self.redact(value)  # type: ignore[return-value]
        if isinstance(value, dict):
            items = [(self.redact_value(k), self._field(k, v)) for k, v in value.items()]
            if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
                return value
            return type(value)(items)  # type: ignore[return-value, call-arg]
        if isinstance(value, list | tuple):
            out = [self.redact_value(item) for item in value]
            if all(a is b for a, b in zip(out, value, strict=True)):
                return value
            return type(value)(out)  # type: ignore[return-value]
        return value

    def _field(self, key: object, value: object) -> object:
        if isinstance(key, str) and isinstance(value, str) and self._builtin:
            prefix = f"{key}: "
            judged = self.redact(prefix + value)
            if judged.startswith(prefix):
                return self.redact(value) if judged[len(prefix):] == value else judged[len(prefix):]
        if isinstance(key, str) and (value is None or isinstance(value, int | float)) and self._builtin:
            # Judged in its JSON spelling, exactly as the same field in a JSON line would be.
            shown = f"{key}: {json.dumps(value)}"
            if self.redact(shown) != shown:
                return self.replacement
            return value
        return self.redact_value(value)

    def redact_line(self, line: bytes) -> bytes:
        """Redact one serialised record: UTF-8 JSON, with or without its final newline.

        Args:
            line: The bytes about to be written.

        Returns:
            The bytes to write instead (the same object when nothing matched).
        """
        if not self._patterns and not self._might_match(line) and (line.isascii() or _UTF8(line)):
            return line  # the common case: one pass of the Rust matcher, nothing decoded
        body = line[:-1] if line.endswith(b"\n") else line
        text = body.decode("utf-8", "surrogateescape")
        redacted = self.redact_json(text)
        if redacted is text:
            return line
        out = redacted.encode("utf-8", "surrogateescape")
        return out + b"\n" if len(body) != len(line) else out

    # ------------------------------------------------------------------------------------------
    # Internals

    def _builtin_spans(self, text: str) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        if not self._builtin:
            return spans
        for rule, compiled, might_match in zip(BUILTIN_RULES, _COMPILED, _RULE_MATCHERS, strict=True):
            if not might_match(text):
                continue
            for anchor in rule.anchors:
                at = text.find(anchor)
                while at != -1:
                    span = _match_rule(rule, compiled, text, at, len(anchor))
                    if span is not None:
                        spans.append(span)
                    at = text.find(anchor, at + 1)
        return spans

    def _other_spans(self, text: str) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        if self._literals is not None:
            spans.extend(match.span() for match in self._literals.finditer(text))
        for pattern in self._patterns:
            has_group = "secret" in pattern.groupindex
            for match in pattern.finditer(text):
                span = match.span("secret") if has_group else match.span()
                if span[0] < span[1]:
                    spans.append(span)
        return spans

    def _redact_string_token(self, match: re.Match[str]) -> str:
        token = match.group()
        try:
            value = json.loads(token)
        except ValueError:
            return token
        redacted = self.redact(value)
        if redacted is value or redacted == value:
            return token
        return json.dumps(redacted, ensure_ascii=token.isascii())


def default_redactor() -> Redactor:
    """The redactor the writer, sidecars and exports use unless given one (:meth:`Redactor.from_env`)."""
    return Redactor.from_env()


# ----------------------------------------------------------------------------------------------
# Helpers


@lru_cache(maxsize=16)
def _cached(patterns: tuple[str, ...], values: tuple[str, ...]) -> Redactor:
    # Writers are opened often (tests, reruns): build the matchers once per configuration.
    return Redactor(patterns=patterns, secrets=values)


def _match_rule(
    rule: Rule, compiled: re.Pattern[str], text: str, at: int, length: int
) -> tuple[int, int] | None:
    if rule.boundary == "name":
        start = _name_start(text, at)
        name = text[start : at + length]
        if (at + length < len(text) and text[at + length] in _NAME_CHARS) or not _SECRET_NAME.fullmatch(name):
            return None
        match = compiled.match(text, at + length)
    else:
        if not _boundary_ok(text, at, _NAME_CHARS if rule.boundary == "token" else _WORD_CHARS):
            return None
        match = compiled.match(text, at)
    return None if match is None else match.span("s")


def _after_escape(text: str, at: int) -> bool:
    # Whether ``at`` directly follows a JSON escape (``\n``, ``\t``… or ``\u001b``): the letters of
    # an escape are not part of the word that follows it.
    if at >= 2 and text[at - 2] == "\\" and text[at - 1] in "nrtbf":
        return True
    return (
        at >= 6 and text[at - 6] == "\\" and text[at - 5] == "u" and all(c in _HEX for c in text[at - 4 : at])
    )


def _boundary_ok(text: str, at: int, inside: frozenset[str]) -> bool:
    return at == 0 or text[at - 1] not in inside or _after_escape(text, at)


def _name_start(text: str, end: int) -> int:
    start = end
    limit = max(0, end - _MAX_NAME)
    while start > limit and text[start - 1] in _NAME_CHARS and not _after_escape(text, start):
        start -= 1
    return start


def _names(text: str) -> list[str]:
    return [name for name in re.split(r"[\s,]+", text) if name]


def _compile_user(pattern: str | re.Pattern[str]) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        compiled = pattern
    else:
        try:
            compiled = re.compile(pattern)
        except re.error as error:
            raise ConfigError(
                f"redaction pattern {pattern!r} is not a valid regular expression: {error}"
            ) from None
    if not isinstance(compiled.pattern, str):
        raise ConfigError(f"redaction pattern {compiled.pattern!r} must be a text (str) pattern")
    if compiled.fullmatch("") is not None:
        raise ConfigError(f"redaction pattern {compiled.pattern!r} matches the empty string")
    return compiled


def _json_body(value: str, *, ascii: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii)[1:-1]


def _replace(
    text: str,
    spans: list[tuple[int, int]],
    replacement: str,
    special: Mapping[tuple[int, int], str] | None = None,
) -> str:
    spans.sort()
    out: list[str] = []
    position = 0
    for start, end in spans:
        if end <= position:
            continue  # inside a span already replaced
        out.append(text[position : max(start, position)])
        out.append(special.get((start, end), replacement) if special else replacement)
        position = end
    out.append(text[position:])
    return "".join(out)


def _bare_replacements(
    text: str, spans: list[tuple[int, int]], replacement: str
) -> dict[tuple[int, int], str]:
    """The spans that are a whole bare JSON value (a number, true, false, null), each with its quoted
    replacement: ``"[redacted]"`` outside strings; inside a string (a JSON text held in a string),
    quoted with the escaped quote that closed its key, so that text stays JSON too."""
    special: dict[tuple[int, int], str] = {}
    regions: tuple[list[int], list[int]] | None = None
    for start, end in spans:
        if (start and text[start - 1] in "\"'") or _BARE.fullmatch(text, start, end) is None:
            continue  # a quoted value, or text that is no JSON value: replaced in place
        if regions is None:
            found = [m.span() for m in _JSON_STRING.finditer(text)]
            regions = ([a for a, _ in found], [b for _, b in found])
        at = bisect_right(regions[0], start) - 1
        if at < 0 or regions[1][at] <= start:
            special[(start, end)] = f'"{replacement}"'  # a bare token of the document itself
            continue
        quote = _key_quote(text, start)
        if quote:
            special[(start, end)] = f"{quote}{replacement}{quote}"
    return special


def _key_quote(text: str, at: int) -> str:
    """The quote that closed the key before ``: value`` at ``at`` (inside a string: ``\\"`` escaped
    once, ``\\\\\\"`` twice, or ``'``), or ``""`` when the value does not follow a quoted key."""
    at = _skip_space_back(text, at)
    if at == 0 or text[at - 1] != ":":
        return ""
    at = _skip_space_back(text, at - 1)
    if at == 0 or text[at - 1] not in "\"'":
        return ""
    slashes = 0
    while at - 1 - slashes > 0 and text[at - 2 - slashes] == "\\":
        slashes += 1
    if text[at - 1] == "'":
        return "'" if slashes == 0 else ""
    return text[at - 1 - slashes : at] if slashes % 2 == 1 else ""


def _skip_space_back(text: str, at: int) -> int:
    while at > 0:
        if text[at - 1] in " \t\r\n":
            at -= 1
        elif at >= 2 and text[at - 2] == "\\" and text[at - 1] in "nrt":
            at -= 2
        else:
            break
    return at


def _parses(text: str) -> bool | None:
    """Whether ``text`` is JSON; ``None`` when too deep to tell."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        state = _json_state(text)  # orjson refuses some valid JSON (lone surrogate escapes, depth)
        return None if state == "deep" else state == "ok"
    return True


def _json_state(text: str) -> Literal["ok", "deep", "invalid"]:
    try:
        json.loads(text)
    except RecursionError:
        return "deep"
    except ValueError:
        return "invalid"
    return "ok"
