r"""Secrets out of everything fpdebug writes: the :class:`Redactor` and the process's default one.

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
  ``token`` followed by ``:`` or ``=`` (as text, as a JSON key, as a header). As a JSON key (in the
  document or in JSON text held in its strings, any depth) the name is recognised in any letter case
  and with its letters spelled as ``\uXXXX`` escapes, and the WHOLE string value is redacted, up to
  its closing quote, whatever characters it holds (``{"pAssword": "a b;c\"d"}`` →
  ``{"pAssword": "[redacted]"}``). In plain text the name is recognised in lower, Title and UPPER
  case; a quoted value (``password="a b"``, ``'a b'``) is redacted to its closing quote, an unquoted
  one up to the first space or one of ``"'\,;&<>(){}[]`` (``password=ab&cd`` keeps ``&cd``);
- the literal values of ``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY`` and of every environment variable
  named in ``FPDEBUG_REDACT_ENV`` (comma-separated) or passed as ``env_vars``, raw or spelled as JSON
  spells them (escaped quotes and backslashes, ``\uXXXX``) in JSON text held in strings down to
  :data:`MAX_DEPTH` levels; values shorter than :data:`MIN_LITERAL` characters are ignored
  (redacting every ``abc`` would destroy the trace);
- user patterns: ``FPDEBUG_REDACT_PATTERNS`` (one regular expression per line) and ``patterns``.
  A pattern with a group named ``secret`` redacts that group only, otherwise the whole match.

**JSON stays JSON.** :meth:`Redactor.redact_json` changes only the content of JSON strings, and
the bare value (a number, ``true``, ``false``, ``null``) of a secret-named key, which becomes the
string ``"[redacted]"`` as a whole token (``{"password": 4821}`` → ``{"password": "[redacted]"}``;
inside a JSON text held in a string, quoted the way its key is, ``\"[redacted]\"``). The
built-in secrets never contain a quote or a backslash and never start inside an escape, so they
are replaced in place, and so is a secret-named key's quoted value (its escaped content, between
quotes of the same depth). A literal or user pattern whose match would touch the JSON syntax (a
quote, an escape, a number) is applied to each decoded string instead, which is then re-encoded; a
string that holds JSON text is redacted as JSON in turn (to :data:`MAX_DEPTH`). Every
changed line is parsed again: should it not parse (it never should), the line is redacted the
conservative way instead (decoded, every string and every value of a secret-named key redacted,
re-encoded), so a redacted line always parses, stays one line, and no record is lost.

**Cost.** A line with nothing that looks like a secret costs one pass of a Rust literal matcher
(pydantic-core's regex engine): about 0.3 µs per KB. Only lines that contain a trigger (``sk-``,
``Bearer``, ``key:``, a name in any case before ``":``, a ``\u`` escape of a letter…) are examined
in detail. User patterns run with Python's ``re`` on every line.

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
    "MAX_DEPTH",
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
_ASSIGN = rf"(?P<k>{_QUOTE}){_SPACE}*(?P<a>[:=]){_SPACE}*"
# The quote that opens a quoted value (``"``, ``\"`` at any depth, or ``'``): the value then runs to
# its closing quote (:func:`_closing_quote`); ``v`` marks where its content starts.
_OPEN = r"(?P<q>\\*[\"'])"
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
    ignore_case: bool = False
    """Anchors are found in any letter case (``pAssword``); the pre-check's literals stay exact."""

    def trigger_anchors(self) -> tuple[str, ...]:
        """The anchors searched exactly: each in lower, Title and UPPER case when ``ignore_case``."""
        return _casings(*self.anchors) if self.ignore_case else self.anchors

    def trigger_literals(self) -> tuple[str, ...]:
        """The literals that must occur in a text for this rule to match anything in it."""
        return self.triggers or self.anchors


_NAME_WORDS = ("key", "token", "secret", "password", "passwd")
_NAMES = _casings(*_NAME_WORDS)

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
        rf"(?i:authorization){_ASSIGN}(?:{_OPEN}{_SPACE}*)?"
        rf"(?:(?i:bearer|basic|token|bot|apikey|key){_SPACE}+)?+(?P<v>)(?P<s>{_VALUE})?",
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
        'value of a secret-named field (api_key=…, "password": …)',
        _NAME_WORDS,
        rf"{_ASSIGN}(?:{_OPEN}(?P<v>)|(?P<s>{_VALUE}))",
        "name",
        tuple(a + s for a in _NAMES for s in _SUFFIXES),
        ignore_case=True,
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
    return "".join(c if (c.isalnum() and c.isascii()) or c == "_" else f"\\x{{{ord(c):x}}}" for c in text)


def _literal_matcher(literals: Iterable[str], *patterns: str) -> Callable[[str | bytes], bool]:
    """A fast "does the text contain any of these literals (or match a pattern)" test (Rust, via
    pydantic-core)."""
    unique = sorted(set(literals), key=len, reverse=True)
    if not unique and not patterns:
        return lambda text: False
    pattern = "|".join([*(_rust_escape(literal) for literal in unique), *patterns])
    validator = SchemaValidator(core_schema.str_schema(pattern=pattern, regex_engine="rust-regex"))
    return validator.isinstance_python


def _rust_matcher(pattern: str) -> Callable[[str | bytes], bool]:
    return SchemaValidator(
        core_schema.str_schema(pattern=pattern, regex_engine="rust-regex")
    ).isinstance_python


_UTF8 = SchemaValidator(core_schema.str_schema(regex_engine="rust-regex")).isinstance_python
_COMPILED = tuple(re.compile(rule.pattern) for rule in BUILTIN_RULES)
_RULE_MATCHERS = tuple(_literal_matcher(rule.trigger_literals()) for rule in BUILTIN_RULES)
_ANCHORS = tuple(
    # A lookahead, so that overlapping anchors are all found (as the exact search finds them).
    re.compile(f"(?=({'|'.join(map(re.escape, rule.anchors))}))", re.IGNORECASE | re.ASCII)
    if rule.ignore_case
    else None
    for rule in BUILTIN_RULES
)
# A secret's name in any letter case as a JSON key (``"pAssword":``, ``\"Api_KEY\": ``): the exact
# literals of the pre-check cover lower, Title and UPPER case only (a case-insensitive literal set
# is many times slower); this pattern, in the same matcher, is searched from its ``":`` inward.
_ANY_CASE_KEY_PATTERN = r'(?i:key|token|secret|passw(?:or)?d)\\*"[ \t\r\n]*:'
_ANY_CASE_KEY = _rust_matcher(_ANY_CASE_KEY_PATTERN)
# An ASCII letter, ``_`` or ``-`` spelled as a \u escape (``"\u0070assword"``): such a string is
# decoded and re-spelled plainly before the rules look at it, so a name cannot hide behind escapes.
_ESCAPED_NAME_CHARS = ("\\u004", "\\u005", "\\u006", "\\u007", "\\u002d", "\\u002D")
_ESCAPED_NAME_CHAR = re.compile(r"\\u00(?:[4-7][0-9a-fA-F]|2[dD])")
_VALUE_RE = re.compile(_VALUE)
# A quoted value under a secret's name is redacted up to its closing quote; a single-quoted one
# (a Python repr, a shell line) only when no double quote, backslash or line break comes first.
_SINGLE_RUN = re.compile(r"[^'\"\\\n]*")
_JSON_START = re.compile(r"[ \t\r\n]*[\[{]")

MAX_DEPTH = 6
"""How deep JSON text held in strings (JSON in a string in a string…) is decoded and redacted."""

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

    __slots__ = ("_builtin", "_has_form", "_literals", "_might_match", "_patterns", "replacement")

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
        values = sorted(
            {s for s in secrets if isinstance(s, str) and len(s) >= MIN_LITERAL}, key=len, reverse=True
        )
        # The spellings a value takes inside JSON strings, escaped once per level of JSON text held
        # in a string (escaped quotes and backslashes, \uXXXX): each sends a JSON text through the
        # per-string path, where the decoded value matches; in plain text they are matched as they are.
        forms = sorted({f for v in values for f in _spellings(v)} - set(values), key=len, reverse=True)
        spellings = [*values, *forms]
        self._literals: re.Pattern[str] | None = (
            re.compile("|".join(re.escape(v) for v in spellings)) if spellings else None
        )
        self._has_form = _literal_matcher(forms)
        triggers = [lit for rule in BUILTIN_RULES for lit in rule.trigger_literals()] if builtin else []
        escapes = _ESCAPED_NAME_CHARS if builtin else ()
        any_case = (_ANY_CASE_KEY_PATTERN,) if builtin else ()
        self._might_match = _literal_matcher([*triggers, *escapes, *spellings], *any_case)

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
        if self._clean(text):
            return text
        spans = self._builtin_spans(text, in_json=False)[0] + self._other_spans(text)
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
        if self._clean(text):
            return text
        return self._checked(text, self._redact_json(text, 0))

    def _clean(self, text: str | bytes) -> bool:
        # The common case: one pass of the Rust matcher, nothing decoded.
        return not self._patterns and not self._might_match(text) and (text.isascii() or _UTF8(text))

    def _redact_json(self, text: str, depth: int) -> str:
        if self._builtin and "\\u00" in text and _ESCAPED_NAME_CHAR.search(text):
            text = self._respelled(text, depth)  # "\u0070assword" → "password", at every depth
        spans, per_string = self._builtin_spans(text, in_json=True)
        if spans:
            text = _replace(text, spans, self.replacement, _bare_replacements(text, spans, self.replacement))
        if self._literals is None and not self._patterns and not per_string:
            return text
        others = self._other_spans(text)
        if not per_string and not self._has_form(text):
            if not others:
                return text
            if all('"' not in text[a:b] and "\\" not in text[a:b] for a, b in others):
                candidate = _replace(text, others, self.replacement)
                if _json_state(candidate) == "ok":
                    return candidate  # every replacement fell inside a string, clear of escapes
        if _json_state(text) == "invalid":
            return self.redact(text)
        # A match that touches the syntax, an escaped spelling of a literal, a quoted value in text
        # held in a string, or too deep to parse: work string by string (each decoded, and JSON text
        # held in one redacted as JSON in turn, down to MAX_DEPTH).
        return _JSON_STRING.sub(lambda match: self._string_token(match.group(), depth), text)

    def _string_token(self, token: str, depth: int) -> str:
        if self._clean(token):
            return token
        try:
            value = json.loads(token)
        except (ValueError, RecursionError):
            return token
        redacted = self._redact_text(value, depth + 1)
        if redacted is value or redacted == value:
            return token
        return json.dumps(redacted, ensure_ascii=token.isascii())

    def _redact_text(self, text: str, depth: int) -> str:
        """A string's content: redacted as JSON when it is a JSON text (to MAX_DEPTH), else as text."""
        if self._clean(text):
            return text
        if depth <= MAX_DEPTH and _looks_like_json(text) and _parses(text) is not False:
            return self._checked(text, self._redact_json(text, depth))
        return self.redact(text)

    def _respelled(self, text: str, depth: int) -> str:
        """``text`` with every string that spells a name character as a \\u escape re-spelled plainly
        (the same decoded value), in JSON text held in strings too (to MAX_DEPTH)."""

        def respell(match: re.Match[str]) -> str:
            token = match.group()
            if "\\u00" not in token:
                return token
            try:
                value = json.loads(token)
            except (ValueError, RecursionError):
                return token
            plain = value
            if depth < MAX_DEPTH and _looks_like_json(value) and _parses(value) is not False:
                plain = self._respelled(value, depth + 1)
            if plain is value and not _ESCAPED_NAME_CHAR.search(token):
                return token
            return json.dumps(plain, ensure_ascii=token.isascii())

        return _JSON_STRING.sub(respell, text)

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
            return _JSON_STRING.sub(lambda match: self._string_token(match.group(), 0), text)
        return json.dumps(self.redact_value(value), ensure_ascii=text.isascii(), separators=(",", ":"))

    def redact_value(self, value: _V) -> _V:
        """Redact every string in a JSON-like value (dicts, lists and tuples walked, keys included).

        For values about to be serialised by someone else (span attributes, report fields). A string
        under a key is judged with its key, as ``"key": value`` would be in a JSON line: the whole
        string under a secret-named key (``{"api_key": …}``, ``{"pAssword": …}``) becomes
        ``"[redacted]"``, and ``{"Authorization": "Bearer …"}`` keeps its scheme; so is a number,
        boolean or ``None`` under a key, which becomes the string ``"[redacted]"`` when it is a
        secret's (``{"password": 4821}``), as :meth:`redact_json` does in JSON text. A string that
        holds JSON text is redacted as JSON (to :data:`MAX_DEPTH`).

        Args:
            value: A string, a container of values, or anything else (returned as it is).

        Returns:
            A value of the same shape (the same object when nothing changed).
        """
        if isinstance(value, str):
            # A str in gives a str out, but mypy cannot tie ``str`` back to the type variable.
            return self._redact_text(value, 0)  # type: ignore[return-value]
        if isinstance(value, dict):
            items = [(self.redact_value(k), self._field(k, v)) for k, v in value.items()]
            if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
                return value
            return type(value)(items)
        if isinstance(value, list | tuple):
            out = [self.redact_value(item) for item in value]
            if all(a is b for a, b in zip(out, value, strict=True)):
                return value
            return type(value)(out)
        return value

    def _field(self, key: object, value: object) -> object:
        if isinstance(key, str) and isinstance(value, str) and self._builtin:
            if _is_secret_name(key):
                return value if value in ("", self.replacement) else self.replacement
            # Judged in its JSON spelling (``"Authorization": "Bearer …"``), as in a JSON line.
            shown = json.dumps({key: value}, ensure_ascii=False)
            if self._clean(shown):
                return value
            judged = self._redact_json(shown, 0)
            try:
                (redacted,) = json.loads(judged).values()
            except (ValueError, RecursionError):
                return self._redact_text(value, 0)
            if not isinstance(redacted, str):
                return self._redact_text(value, 0)
            return value if redacted == value else redacted
        if isinstance(key, str) and (value is None or isinstance(value, int | float)) and self._builtin:
            # Judged in its JSON spelling, exactly as the same field in a JSON line would be.
            shown = f"{json.dumps(key)}: {json.dumps(value)}"
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
        if self._clean(line):
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

    def _builtin_spans(self, text: str, *, in_json: bool) -> tuple[list[tuple[int, int]], bool]:
        """The built-in rules' spans, and whether a quoted value was left to the per-string path."""
        spans: list[tuple[int, int]] = []
        if not self._builtin:
            return spans, False
        quotes = _QuoteCache(text, in_json=in_json)
        for rule, compiled, might_match, anchors in zip(
            BUILTIN_RULES, _COMPILED, _RULE_MATCHERS, _ANCHORS, strict=True
        ):
            if anchors is not None and _ANY_CASE_KEY(text):
                # A name in any letter case as a JSON key: the slower case-insensitive search.
                for found in anchors.finditer(text):
                    span = _match_rule(
                        rule, compiled, text, found.start(1), found.end(1) - found.start(1), quotes
                    )
                    if span is not None:
                        spans.append(span)
                continue
            if not might_match(text):
                continue
            for anchor in rule.trigger_anchors():
                at = text.find(anchor)
                while at != -1:
                    span = _match_rule(rule, compiled, text, at, len(anchor), quotes)
                    if span is not None:
                        spans.append(span)
                    at = text.find(anchor, at + 1)
        return spans, quotes.deferred

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
    rule: Rule,
    compiled: re.Pattern[str],
    text: str,
    at: int,
    length: int,
    quotes: _QuoteCache | None = None,
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
    if match is None:
        return None
    if "q" in compiled.groupindex and match.group("q") is not None:
        return (quotes or _QuoteCache(text, in_json=False)).value(match)
    return None if match.group("s") is None else match.span("s")


class _QuoteCache:
    """Finds where quoted values end, remembering each search (many names may share one value)."""

    __slots__ = ("_found", "deferred", "in_json", "text")

    def __init__(self, text: str, *, in_json: bool) -> None:
        self.text = text
        self.in_json = in_json
        self.deferred = False
        """A quoted value was left to the per-string path (JSON text only)."""
        self._found: dict[str, tuple[int, int, int | None]] = {}

    def value(self, match: re.Match[str]) -> tuple[int, int] | None:
        """The span of the quoted value a rule matched the opening quote of (group ``q``)."""
        quote, start = match.group("q"), match.start("v")
        if self.in_json and not (match.group("a") == ":" and match.group("k") == quote):
            # Not a JSON key's value ("name": "…" with the same quote spelling at both ends): the
            # quote after ``password=`` may close the very string the name is in. The string is
            # decoded and judged as text instead.
            self.deferred = True
            return None
        end = self._closing(quote, start)
        if end is None:  # no closing quote where one must be: the unquoted rule, safe characters only
            found = _VALUE_RE.match(self.text, start)
            return None if found is None else found.span()
        return (start, end) if end > start else None

    def _closing(self, quote: str, start: int) -> int | None:
        known = self._found.get(quote)
        if known is not None and known[0] <= start <= known[1]:
            return known[2]
        end, stop = _closing_quote(self.text, start, quote)
        self._found[quote] = (start, stop, end)
        return end


def _closing_quote(text: str, start: int, quote: str) -> tuple[int | None, int]:
    """Where the value opened by ``quote`` just before ``start`` ends, and up to where that holds.

    A double quote escaped ``k`` times (``k = 2**d - 1``: the quote of JSON text held ``d`` strings
    deep) is closed by the first double quote preceded by ``k + m * 2**d`` backslashes with ``m``
    even (``m`` odd: a quote inside the value). A quote with fewer than ``k`` backslashes ends the
    string the value was in: no closing quote. A single quote is closed by the next single quote
    unless a double quote, a backslash or a line break comes first. Returns (the index of the
    closing quote's first character or ``None``, the last start for which the same answer holds).
    """
    if quote == "'":
        # _SINGLE_RUN matches the empty string, so match() never returns None here.
        stop = _SINGLE_RUN.match(text, start).end()  # type: ignore[union-attr]
        return (stop if stop < len(text) and text[stop] == "'" else None), stop
    k = len(quote) - 1
    if k & (k + 1):
        return None, start  # not a quote of any JSON depth
    width = k + 1
    at = start
    while True:
        x = text.find('"', at)
        if x == -1:
            return None, len(text)
        run = 0
        while x - run > 0 and text[x - run - 1] == "\\":
            run += 1
        if run < k:
            return None, x - run
        pairs, rest = divmod(run - k, width)
        if rest == 0 and pairs % 2 == 0:
            return x - k, x - run
        at = x + 1


def _is_secret_name(key: str) -> bool:
    """Whether a (decoded) key names a secret, as the name rule judges ``"key": …`` in JSON text."""
    start = len(key)
    while start > 0 and key[start - 1] in _NAME_CHARS:
        start -= 1
    return _SECRET_NAME.fullmatch(key, start) is not None


def _looks_like_json(text: str) -> bool:
    return _JSON_START.match(text) is not None


def _spellings(value: str) -> set[str]:
    """``value`` as a JSON string's content, escaped once per level down to MAX_DEPTH, each level
    with or without \\u escapes for non-ASCII (as ``json.dumps``, orjson and pydantic write it)."""
    out: set[str] = set()
    level = {value}
    for _ in range(MAX_DEPTH):
        level = {_json_body(text, ascii=ascii) for text in level for ascii in (False, True)}
        out |= level
    return out


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
