"""``is_unresolved``: the CDK's answer, without a runtime call for a plain string."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from hyperpod_inference.constructs.lazy import is_unresolved, lazy, lazy_string


@pytest.mark.parametrize("value", [
    lazy_string(lambda: "x"),                       # a string token
    f"prefix-{cdk.Aws.ACCOUNT_ID}-suffix",          # a token inside a string
    cdk.Fn.split(",", cdk.Aws.STACK_NAME),          # a list token
    cdk.Token.as_number(lazy(lambda: 1)),           # a number token
    lazy(lambda: {"a": 1}),                         # any token
])
def test_tokens_are_unresolved(value) -> None:
    # GIVEN a deploy-time value THEN it is unresolved, as the CDK says
    assert is_unresolved(value) and cdk.Token.is_unresolved(value)


@pytest.mark.parametrize("value", ["", "plain", "${Token is not this}", "#{not[", 3, None, ["a"]])
def test_literals_are_resolved(value) -> None:
    # GIVEN a literal THEN it is resolved, as the CDK says
    assert not is_unresolved(value) and not cdk.Token.is_unresolved(value)
