"""Values computed at synth: a construct that takes a callable reads the set of endpoints only when the template is
written, so endpoints added after construction count."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsii
from aws_cdk import Aws, IStableAnyProducer, IStableStringProducer, Lazy, Stack, Token, region_info
from constructs import IConstruct

from ..facts.rules import is_deploy_time


def is_unresolved(value: Any) -> bool:
    """``Token.is_unresolved``, without a call into the CDK runtime for a plain string (a fleet checks thousands): a
    string without a token's mark (:func:`~..facts.rules.is_deploy_time`) is literal. The one test of "is this a token"
    for the constructs and the composition."""
    if isinstance(value, str) and not is_deploy_time(value):
        return False
    return Token.is_unresolved(value)


def literal_partition(scope: IConstruct) -> str:
    """The partition of ``scope``'s stack: region_info's literal when the stack's region is known (a template for
    ``us-west-2`` names ``arn:aws:...`` as written, ``cn-north-1`` ``arn:aws-cn:...``), else the deploy-time
    ``AWS::Partition`` (``Stack.partition`` is that token even for a known region)."""
    region = Stack.of(scope).region
    if not is_unresolved(region):
        partition = region_info.RegionInfo.get(region).partition
        if partition:
            return partition
    return Aws.PARTITION


def literal_stack_name(scope: IConstruct) -> str:
    """The name of ``scope``'s stack as it is known at synth. A nested stack's own name is a deploy-time value
    (CloudFormation makes it from its parent's, up to 128 characters), so inside one it is the top-level stack's name
    and the ids of the nested stacks on the way, joined by ``-`` (``Platform-Serving``); a top-level stack's name, in
    a ``Stage`` too, is its own."""
    stack = Stack.of(scope)
    ids: list[str] = []
    while stack.nested_stack_parent is not None:
        ids.insert(0, stack.node.id)
        stack = stack.nested_stack_parent
    return "-".join([stack.stack_name, *ids])


def top_level_stack(scope: IConstruct) -> Stack:
    """The stack of ``scope`` that is not nested in another."""
    stack = Stack.of(scope)
    while stack.nested_stack_parent is not None:
        stack = stack.nested_stack_parent
    return stack


@jsii.implements(IStableAnyProducer)
class _Produce:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn

    def produce(self) -> Any:
        return self.fn()


def lazy(fn: Callable[[], Any]) -> Any:
    """``fn()`` at synth, as a token (``Lazy.any``)."""
    return Lazy.any(_Produce(fn))


@jsii.implements(IStableStringProducer)
class _ProduceString:
    def __init__(self, fn: Callable[[], str]) -> None:
        self.fn = fn

    def produce(self) -> str:
        return self.fn()


def lazy_string(fn: Callable[[], str]) -> str:
    """``fn()`` at synth, as a string token (``Lazy.string``): usable where a plain string is expected, a cdk8s
    object included (the kubectl manifest resolves it)."""
    return Lazy.string(_ProduceString(fn))
