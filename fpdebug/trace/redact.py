r"""Secrets out of everything fpdebug writes: the :class:`Redactor` and the process's default one.

A trace records prompts, replies, tool arguments and tool results verbatim, so a key a tool echoed, a
header a provider error quoted or a password a user pasted would reach the disk with them. The trace
writer (and every sidecar and export) runs each serialised record through a :class:`Redactor`
before the bytes leave the process; what it matches becomes ``[redacted]``.

What is matched by default (:data:`BUILTIN_RULES`):

- keys by their shape: Anthropic ``sk-ant-…``, OpenAI ``sk-proj-…`` / ``sk-svcacct-…`` /
  ``sk-admin-…`` and other ``sk-…`` keys of 20 or more characters with a digit, AWS access key ids
  (``AKIA…``, ``ASIA…``), GitHub tokens (``ghp_…``, ``github_pat_…``), Google API keys
  (``AIza…``), Slack tokens (``xoxb-…``), Stripe secret, restricted and webhook keys
  (``sk_live_…``, ``rk_test_…``, ``whsec_…``), JSON Web Tokens (``eyJ….eyJ….…``), the body of a PEM
  private key block (``-----BEGIN … PRIVATE KEY-----``);
- values by their context: the token after ``Bearer``; the value of an ``Authorization`` header
  (after its scheme); the whole value of a ``Cookie`` or ``Set-Cookie`` header; the password of a URL
  (``postgres://user:[redacted]@host``); the value after a name such as ``api_key``, ``apiKey``, ``x-api-key``,
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
  :data:`MAX_DEPTH` levels (in a decoded string the value itself is matched first, so a backslash or
  quote the string holds next to it is kept); values shorter than :data:`MIN_LITERAL` characters are
  ignored (redacting every ``abc`` would destroy the trace);
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
in detail. A ``\u`` escape of any printable ASCII character sends a line through a re-spelling pass
first, so a key cannot hide behind escaped letters or digits. User patterns run with Python's ``re``
on every line.

**Not a guarantee.** Redaction is pattern-based: a secret with no recognisable shape, no telling
context and no configured value (a password in free prose, a key split across two strings) is
written as it is. Configure ``FPDEBUG_REDACT_ENV`` / ``FPDEBUG_REDACT_PATTERNS`` for your own, and
keep traces private (the writer creates them ``0600``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import TypeVar

from fpdebug.errors import ConfigError
from fpdebug.trace.redact_rules import (
    _ANCHORS,
    _ANY_CASE_KEY,
    _COMPILED,
    _ESCAPED_NAME_CHAR,
    _ESCAPED_NAME_CHARS,
    _JSON_STRING,
    _NAME_ASSIGNED_PATTERN,
    _RULE_MATCHERS,
    _UTF8,
    BUILTIN_RULES,
    MAX_DEPTH,
    PEM_PRIVATE_KEY,
    PEM_TRIGGER,
    Rule,
    _literal_matcher,
)
from fpdebug.trace.redact_scan import (
    _bare_replacements,
    _compile_user,
    _is_secret_name,
    _json_state,
    _looks_like_json,
    _match_rule,
    _names,
    _parses,
    _QuoteCache,
    _replace,
    _spellings,
)

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

_V = TypeVar("_V")
_Matcher = re.Pattern[str]


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

    __slots__ = (
        "_braced",
        "_builtin",
        "_forms_at",
        "_has_form",
        "_literals",
        "_might_match",
        "_might_match_key",
        "_might_match_unnamed",
        "_patterns",
        "_values",
        "replacement",
    )

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
        # A spelling with a brace could match across the braces redact_value's fields are judged in.
        self._braced = any("{" in form or "}" in form for form in spellings)
        self._values: _Matcher | None
        self._forms_at: _Matcher | None
        self._values, self._forms_at = _decoded_matchers(values, forms)
        triggers = (
            [*(lit for rule in BUILTIN_RULES for lit in rule.trigger_literals()), PEM_TRIGGER]
            if builtin
            else []
        )
        escapes = _ESCAPED_NAME_CHARS if builtin else ()
        self._might_match = _literal_matcher([*triggers, *escapes, *spellings])
        # The any-case key pattern in a matcher of its own: one matcher holding both the literals
        # and the pattern was measured a third slower than the two run one after the other (issue
        # 22: 2.8 µs against 1.0 + 0.9 for a 900-byte trace line), its literal prefilter weakened.
        self._might_match_key: Callable[[str | bytes], bool] = _ANY_CASE_KEY if builtin else _never
        self._might_match_unnamed = _unnamed_matcher(builtin, spellings)

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
        return self._redact_plain(text, decoded=False)

    def _redact_plain(self, text: str, *, decoded: bool) -> str:
        """Plain text; ``decoded``: a JSON string's decoded content, its backslashes and quotes its own."""
        if self._clean(text):
            return text
        spans = self._builtin_spans(text, in_json=False)[0] + self._other_spans(text, decoded=decoded)
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
        if self._clean(text) or self._quiet(text):
            return text
        return self._checked(text, self._redact_json(text, 0))

    def _clean(self, text: str | bytes) -> bool:
        # The common case: one pass of the Rust matcher, nothing decoded.
        return (
            not self._patterns
            and not self._might_match(text)
            and not self._might_match_key(text)
            and (text.isascii() or _UTF8(text))
        )

    def _quiet(self, text: str) -> bool:
        """Whether :meth:`_redact_json` would return ``text`` as it is, though :meth:`_clean` says no.

        The common reason a clean JSON text fails :meth:`_clean` is a key that holds a secret's name
        word without being one (every ``"key":`` of an OTLP attribute list, ``"input_tokens":``).
        This answers from one pass of the Rust matcher, instead of trying the name rule at
        every such key (most of an OTLP export's redaction time, issue 22). It is exact, not a
        heuristic: the only rule whose anchors are searched in any case is the secret-name rule
        (``tests/trace/test_redact_quiet.py`` holds it to that), it can match only where
        :data:`_NAME_ASSIGNED_PATTERN` does, every other rule, the PEM block, the \\u escapes and the
        configured values need one of ``_might_match_unnamed``'s literals, and user patterns are
        never skipped.
        """
        return (
            self._builtin
            and not self._patterns
            and not self._might_match_unnamed(text)
            and (text.isascii() or _UTF8(text))
        )

    def _redact_json(self, text: str, depth: int) -> str:
        if self._builtin and "\\u00" in text and _ESCAPED_NAME_CHAR.search(text):
            text = self._respelled(text, depth)  # "\u0070assword" → "password", at every depth
        spans, per_string = self._builtin_spans(text, in_json=True)
        if spans:
            text = _replace(text, spans, self.replacement, _bare_replacements(text, spans, self.replacement))
        pem = self._builtin and PEM_TRIGGER in text
        if self._literals is None and not self._patterns and not per_string and not pem:
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
        parses = _looks_like_json(text) and _parses(text) is not False
        if parses and depth <= MAX_DEPTH:
            return self._checked(text, self._redact_json(text, depth))
        # JSON text too deep to redact as JSON keeps its escapes: an escaped spelling is the value.
        return self._redact_plain(text, decoded=not parses)

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
        if isinstance(value, dict | list | tuple) and self._clean_value(value):
            return value  # nothing in it can match: the walk below would change nothing
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

    def _clean_value(self, value: dict[object, object] | list[object] | tuple[object, ...]) -> bool:
        """Whether :meth:`redact_value` is sure to change nothing in ``value``, judged on its JSON text.

        The walk judges each string alone, each ``key: string`` field as ``{"key": "value"}``
        (``json.dumps``, ``ensure_ascii=False``) and each ``key: scalar`` field as
        ``"key": scalar`` (``json.dumps``, ASCII): all with :meth:`_clean` first, changing nothing
        when it passes. ``json.dumps(value, ensure_ascii=False)`` holds every one of those texts
        as it is, as long as it has no backslash (no string needed an escape): then each string
        is its own content between quotes, each field its ``"key": value`` with the same
        separators. The ASCII spelling (``ensure_ascii=True``) holds the scalar fields of
        non-ASCII keys. What ``{…}`` adds around a field (its braces) is in no built-in trigger,
        and a configured secret spelled with a brace turns this shortcut off. A matcher finds
        nothing in a text only if it finds nothing in any part of it, so a clean whole means
        clean parts (issue 22: the walk was most of ``report``'s redaction, which this skips).
        """
        if self._patterns or self._braced:
            return False
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return False  # not plain JSON data: the walk decides
        if "\\" in text or not self._clean(text):
            return False
        return text.isascii() or self._clean(json.dumps(value))

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
                for start, length in anchors.hits(text):
                    span = _match_rule(rule, compiled, text, start, length, quotes)
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

    def _other_spans(self, text: str, *, decoded: bool = False) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        if self._builtin and PEM_TRIGGER in text:
            spans.extend(match.span("secret") for match in PEM_PRIVATE_KEY.finditer(text))
        if decoded and self._values is not None and self._forms_at is not None:
            spans.extend(_values_first(text, self._values, self._forms_at))
        elif self._literals is not None:
            spans.extend(match.span() for match in self._literals.finditer(text))
        for pattern in self._patterns:
            has_group = "secret" in pattern.groupindex
            for match in pattern.finditer(text):
                span = match.span("secret") if has_group else match.span()
                if span[0] < span[1]:
                    spans.append(span)
        return spans


def _unnamed_matcher(builtin: bool, spellings: list[str]) -> Callable[[str | bytes], bool]:
    """The pre-check without the secret-name rule's literals, plus where that rule can match at
    all: it tells a JSON text whose only trigger is a name that cannot match (``"key":``,
    ``input_tokens":``) from one that needs the full pass (:meth:`Redactor._quiet`)."""
    if not builtin:
        return _literal_matcher(spellings)
    others = [lit for rule in BUILTIN_RULES if not rule.ignore_case for lit in rule.trigger_literals()]
    return _literal_matcher([*others, PEM_TRIGGER, *_ESCAPED_NAME_CHARS, *spellings], _NAME_ASSIGNED_PATTERN)


def _decoded_matchers(values: list[str], forms: list[str]) -> tuple[_Matcher | None, _Matcher | None]:
    """The values, and their escaped spellings as a lookahead (a spelling at every start), for text
    decoded from a JSON string; ``(None, None)`` when no value has a spelling of its own."""
    if not values or not forms:
        return None, None
    spellings = "|".join(re.escape(form) for form in forms)
    return re.compile("|".join(re.escape(value) for value in values)), re.compile(f"(?=({spellings}))")


def _values_first(text: str, values: re.Pattern[str], forms_at: re.Pattern[str]) -> list[tuple[int, int]]:
    """The configured values in decoded text, then their escaped spellings where they overlap none.

    In a decoded string a backslash or quote is a character of the text, not an escape. An escaped spelling that starts earlier (``\\\\value`` for a value starting with a backslash,
    ``\\"value`` for one starting with a quote) would otherwise win in ``\\`` + ``\\value`` and take
    the backslash the text holds with the value; redacting the value itself removes that spelling too.
    """
    spans = [match.span() for match in values.finditer(text)]
    for match in forms_at.finditer(text):
        start, end = match.span(1)
        if all(end <= a or start >= b for a, b in spans):
            spans.append((start, end))
    return spans


def _never(text: str | bytes) -> bool:
    return False


def default_redactor() -> Redactor:
    """The redactor the writer, sidecars and exports use unless given one (:meth:`Redactor.from_env`)."""
    return Redactor.from_env()


@lru_cache(maxsize=16)
def _cached(patterns: tuple[str, ...], values: tuple[str, ...]) -> Redactor:
    # Writers are opened often (tests, reruns): build the matchers once per configuration.
    return Redactor(patterns=patterns, secrets=values)
