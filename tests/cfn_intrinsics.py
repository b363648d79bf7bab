"""Resolve the intrinsics CDK writes into a template (``Ref``, ``Fn::GetAtt``, ``Fn::Join``) as CloudFormation
would, given how the caller's deployment answers a reference and an attribute."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def resolve(value: Any, ref: Callable[[str], Any], get_att: Callable[[str, str], Any]) -> Any:
    """``value`` with every ``Ref`` / ``Fn::GetAtt`` answered by ``ref`` / ``get_att`` and every ``Fn::Join`` joined."""
    if isinstance(value, list):
        return [resolve(v, ref, get_att) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"}:
        return ref(value["Ref"])
    if set(value) == {"Fn::GetAtt"}:
        return get_att(*value["Fn::GetAtt"])
    if set(value) == {"Fn::Join"}:
        sep, parts = value["Fn::Join"]
        return sep.join(str(p) for p in resolve(parts, ref, get_att))
    return {k: resolve(v, ref, get_att) for k, v in value.items()}
