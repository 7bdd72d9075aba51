r"""The built-in redaction rules: what a secret looks like, and the fast matchers that find one.

Internal to :mod:`fpdebug.trace.redact`, which documents what is matched and re-exports
:class:`Rule` and :data:`BUILTIN_RULES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic_core import SchemaValidator, core_schema

__all__ = ["BUILTIN_RULES", "MAX_DEPTH", "PEM_PRIVATE_KEY", "PEM_TRIGGER", "Boundary", "Rule"]

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


Boundary = Literal["token", "word", "name", "any"]
"""How a rule checks what precedes its anchor: not ``[A-Za-z0-9_-]`` (``token``), not ``[A-Za-z0-9]``
(``word``), the anchor ends a name whose start is found by scanning back (``name``), or no check
(``any``: the anchor itself is unambiguous, as ``://`` after a URL's scheme)."""


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
    Rule(
        "Cookie / Set-Cookie header value",
        _casings("cookie"),
        # The whole header value (every name=value pair): to its closing quote, or to the line's end.
        rf"(?i:cookie){_ASSIGN}(?:{_OPEN}(?P<v>)|(?P<s>[^\"'\\\r\n]{{4,}}))",
        "word",
        tuple(a + s for a in _casings("cookie") for s in _SUFFIXES),
    ),
    Rule(
        "password in a URL (scheme://user:password@host)",
        ("://",),
        r"://[A-Za-z0-9._~%+-]*:(?P<s>[^\s/?#@\"'\\]+)@",
        "any",
    ),
    Rule(
        "JSON Web Token",
        ("eyJ",),
        r"(?P<s>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
        "token",
    ),
    Rule(
        "Stripe secret, restricted or webhook key",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
        r"(?P<s>(?:[sr]k_(?:live|test)|whsec)_[A-Za-z0-9]{16,})",
        "word",
    ),
)
"""The built-in rules, in the order they are tried."""

PEM_TRIGGER = "PRIVATE KEY-----"
"""The literal every PEM private key block holds (``-----BEGIN RSA PRIVATE KEY-----``)."""

PEM_PRIVATE_KEY = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----(?P<secret>.+?)-----END \1PRIVATE KEY-----", re.DOTALL
)
"""A PEM private key block; its body (``secret``) spans lines, so in JSON text (where a line break is
the escape ``\\n``) it is matched in each decoded string, as a user pattern is."""

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
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class _AnyCaseAnchors:
    """Where a rule's anchors occur in any ASCII letter case, overlapping ones included.

    What ``re.finditer`` with ``(?=(a|b|…))`` under ``IGNORECASE | ASCII`` finds, in the same order
    (the first anchor listed wins at a position), but by ``str.find`` over the text folded to lower
    case once: the lookahead tried every alternative at every position, 1.8 ms for a 4 KB OTLP
    span whose every ``"key":`` sends it here (issue 22).
    """

    def __init__(self, anchors: tuple[str, ...]) -> None:
        self.anchors = tuple(anchor.translate(_ASCII_LOWER) for anchor in anchors)

    def hits(self, text: str) -> list[tuple[int, int]]:
        """``(start, length)`` of each anchor found, by position."""
        folded = text.translate(_ASCII_LOWER)  # ASCII letters only: positions do not move
        first: dict[int, int] = {}
        for anchor in self.anchors:
            at = folded.find(anchor)
            while at != -1:
                first.setdefault(at, len(anchor))
                at = folded.find(anchor, at + 1)
        return sorted(first.items())


_ANCHORS = tuple(_AnyCaseAnchors(rule.anchors) if rule.ignore_case else None for rule in BUILTIN_RULES)
# A secret's name in any letter case as a JSON key (``"pAssword":``, ``\"Api_KEY\": ``): the exact
# literals of the pre-check cover lower, Title and UPPER case only (a case-insensitive literal set
# is many times slower); this pattern, in the same matcher, is searched from its ``":`` inward.
_ANY_CASE_KEY_PATTERN = r'(?i:key|token|secret|passw(?:or)?d)\\*"[ \t\r\n]*:'
_ANY_CASE_KEY = _rust_matcher(_ANY_CASE_KEY_PATTERN)
# Where the secret-name rule can match at all (Rust syntax, for the literal matcher): one of its
# anchors, in any case, followed by what its pattern requires next (an optional quote, spaces, ``:``
# or ``=``). A ``key`` right after a double quote is left out: its name is ``key`` alone, which is
# not a secret's (``_SECRET_NAME``), and OTLP's layout (``{"key": "gen_ai.system", "value": …}``)
# holds one per attribute.
_NAME_ASSIGNED_PATTERN = (
    r'(?i:(?:^|[^"])key|token|secret|passw(?:or)?d)(?:\\*["\'])?(?:[ \t\r\n]|\\[nrt])*[:=]'
)
# A printable ASCII character (a letter, a digit, ``_``, ``-``, ``:``, ``@``…) spelled as a \u escape
# (``"\u0070assword"``, ``"sk-ant-api\u00303-…"``): such a string is decoded and re-spelled plainly
# before the rules look at it, so neither a name nor a key can hide behind escapes.
_ESCAPED_NAME_CHARS = ("\\u002", "\\u003", "\\u004", "\\u005", "\\u006", "\\u007")
_ESCAPED_NAME_CHAR = re.compile(r"\\u00[2-7][0-9a-fA-F]")
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
