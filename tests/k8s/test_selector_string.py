"""Label selectors written as strings, against what k8s.io/apimachinery/pkg/labels/selector.go
`Parse` accepts and what `Requirement.Matches` selects (our own expected values; each row names
the function whose behaviour it follows)."""

from __future__ import annotations

import pytest

from gpudrv_check.k8s.selector_string import _tokens, parse_selector

NONE: dict[str, str] = {}
WEB = {"app": "web"}
EMPTY_APP = {"app": ""}
TWO = {"x": "2"}
ZERO = {"x": "0"}
WORD = {"x": "two"}

# (selector, labels, matches)
MATCHES = [
    ("", NONE, True),  # parse: the empty string is every label set
    ("app=web", WEB, True),  # parseExactValue; Matches Equals
    ("app==web", WEB, True),  # DoubleEqualsToken
    ("app!=web", WEB, False),  # Matches NotEquals: the key present with the value
    ("app!=web", NONE, True),  # Matches NotEquals: the key absent
    ("app=", EMPTY_APP, True),  # parseExactValue: an empty value before the end
    ("app=", NONE, False),
    ("app in (web,db)", WEB, True),  # parseValues, parseIdentifiersList
    ("app in ()", EMPTY_APP, True),  # parseValues: `()` is the set of the empty string
    ("app in ()", WEB, False),
    ("app in (,web)", EMPTY_APP, True),  # parseIdentifiersList: `(,` adds ""
    ("app notin (web)", NONE, True),  # Matches NotIn: the key absent
    ("app notin (web)", WEB, False),
    ("app notin (in)", WEB, True),  # lookahead(Values): `in` is a value there
    ("in=web", {"in": "web"}, True),  # parse: `in` is a key where a requirement starts
    ("app", WEB, True),  # parseKeyAndInferOperator: Exists
    ("!app", WEB, False),  # DoesNotExistToken
    ("!app", NONE, True),
    ("x>1", TWO, True),  # Matches GreaterThan
    ("x>1", ZERO, False),
    ("x<1", ZERO, True),  # Matches LessThan
    ("x>1", WORD, False),  # Matches: a label value that is no integer never matches
    ("x>1", NONE, False),
    ("app=web,x>1", {"app": "web", "x": "2"}, True),  # requirements ANDed
    ("app=web,x>1", WEB, False),
    (" app = web ,\tx\n> 1 ", {"app": "web", "x": "2"}, True),  # isWhitespace: blanks split
]

# texts Parse rejects
INVALID = [
    "app=Web_",  # NewRequirement: validateLabelValue (ends with `_`)
    "-app=web",  # NewRequirement: validateLabelKey (IsQualifiedName)
    "x>a",  # NewRequirement: for 'Gt', 'Lt' operators, the value must be an integer
    "x>-5",  # NewRequirement: "-5" is no label value
    "x>99999999999999999999",  # strconv.ParseInt: out of the int64 range
    "!app=web",  # parse: after a DoesNotExist requirement, ',' or the end
    "app,",  # parse: an identifier after ','
    ",app",  # parse: !, identifier, or 'end of string'
    "app web",  # parseOperator: no operator
    "app in (web",  # parseIdentifiersList: ',' or ')'
    "app in web",  # parseValues: '(' expected
    "app=web=db",  # parse: ',' or 'end of string' after the value
    "app=(",  # parseExactValue: an identifier
    "app in ((web))",  # parseValues: ',', ')' or identifier
]


@pytest.mark.parametrize(("text", "labels", "expected"), MATCHES)
def test_a_selector_selects_as_requirement_matches(text: str, labels: dict, expected: bool):
    matcher = parse_selector(text)
    assert matcher is not None, text
    assert matcher(labels) is expected


@pytest.mark.parametrize("text", INVALID)
def test_a_selector_parse_rejects_is_none(text: str):
    assert parse_selector(text) is None


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("a!=b", ["a", "!=", "b", ""]),  # scanSpecialSymbol: the longest operator
        ("a!==b", ["a", "!=", "=", "b", ""]),
        ("a=!b", ["a", "=", "!", "b", ""]),
        ("a\0b", ["a", "b", ""]),  # Lexer.read: a NUL ends the identifier, consumed
        ("a=b,\0c=d", ["a", "=", "b", ",", "c", "=", "d", ""]),  # consumed after the ','
        ("a=b, \0c=d", ["a", "=", "b", ",", ""]),  # Lex: a NUL where a token starts ends all
    ],
)
def test_the_lexer_splits_as_lex_does(text: str, tokens: list[str]):
    assert _tokens(text) == tokens
