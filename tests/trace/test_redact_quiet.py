"""``Redactor._quiet``: the shortcut that lets a JSON text whose only trigger is a harmless key
(``"key":`` of OTLP's attribute lists, ``"input_tokens":``) skip the full redaction pass.

It must never let a secret through: wherever it says "nothing to do", the full pass must agree.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from fpdebug.trace.redact import BUILTIN_RULES, Redactor
from fpdebug.trace.redact_rules import _NAME_WORDS

_PIECES = st.sampled_from(
    [
        '"key": ',
        '"KEY":',
        'api_"key": ',
        '\\"key\\": ',
        "key",
        "Key",
        "kEy",
        "token",
        "tokens",
        "Secret",
        "passWd",
        "password",
        "api_",
        "x-",
        '"',
        "'",
        "\\",
        "\\\\",
        "\\n",
        "\n",
        " ",
        ":",
        "=",
        ",",
        "{",
        "}",
        "sk-ant-api03-",
        "ABCDEFGHIJKLMNOPQRSTUV0123",
        "Bearer ",
        "Authorization",
        "cookie",
        "://u:p@",
        "eyJ",
        "\\u0070",
        "configured-literal-value",
        "é",
        "0123456789",
    ]
)


def _agrees(redactor: Redactor, text: str) -> None:
    if redactor._quiet(text):
        assert redactor._redact_json(text, 0) == text
        assert redactor.redact_json(text) == text


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_the_shortcut_never_skips_a_text_the_full_pass_would_change(text: str) -> None:
    for redactor in (Redactor(), Redactor(secrets=["configured-literal-value"])):
        _agrees(redactor, text)
        _agrees(redactor, json.dumps({"key": text, "value": {"stringValue": text}}, indent=2))
        _agrees(redactor, json.dumps({text: text}))


def test_only_the_secret_name_rule_is_searched_in_any_case() -> None:
    # _quiet's proof: every other rule is found through its exact trigger literals.
    assert [rule.anchors for rule in BUILTIN_RULES if rule.ignore_case] == [_NAME_WORDS]
    assert all(rule.boundary == "name" for rule in BUILTIN_RULES if rule.ignore_case)


def test_an_otlp_attribute_list_is_quiet_and_a_secret_in_it_is_not() -> None:
    redactor = Redactor()
    clean = json.dumps(
        {"attributes": [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "5"}}]}, indent=2
    )
    assert redactor._quiet(clean) and redactor.redact_json(clean) == clean
    for leak in ('{\\"api_key\\": \\"hunter2-secret\\"}', "password=hunter2-secret", "Bearer hunter2secret9"):
        text = json.dumps({"attributes": [{"key": "note", "value": {"stringValue": leak}}]}, indent=2)
        assert not redactor._quiet(text)
        assert "hunter2" not in redactor.redact_json(text)
    assert not Redactor(patterns=["x"])._quiet(clean)  # user patterns always get the full pass
