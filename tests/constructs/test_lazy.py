"""``is_unresolved``: the CDK's answer, without a runtime call for a plain string."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from hyperpod_inference.constructs.lazy import is_unresolved, lazy, lazy_string

# Built in the test (a token's text carries a counter, so tokens made at collection would differ between workers)
TOKENS = {
    "string token": lambda: lazy_string(lambda: "x"),
    "token inside a string": lambda: f"prefix-{cdk.Aws.ACCOUNT_ID}-suffix",
    "list token": lambda: cdk.Fn.split(",", cdk.Aws.STACK_NAME),
    "number token": lambda: cdk.Token.as_number(lazy(lambda: 1)),
    "any token": lambda: lazy(lambda: {"a": 1}),
}


@pytest.mark.parametrize("kind", TOKENS)
def test_tokens_are_unresolved(kind) -> None:
    # GIVEN a deploy-time value THEN it is unresolved, as the CDK says
    value = TOKENS[kind]()
    assert is_unresolved(value) and cdk.Token.is_unresolved(value)


@pytest.mark.parametrize("value", ["", "plain", "${Token is not this}", "#{not[", 3, None, ["a"]])
def test_literals_are_resolved(value) -> None:
    # GIVEN a literal THEN it is resolved, as the CDK says
    assert not is_unresolved(value) and not cdk.Token.is_unresolved(value)
