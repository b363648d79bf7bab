"""A small evaluator of one resource-based policy (an SNS topic policy, a KMS key policy) for one request, as the
service that owns the resource decides it when no identity policy is involved (a service principal has none):

- an explicit ``Deny`` in a statement that applies wins; else an ``Allow`` that applies allows; else the request is
  denied implicitly ("Policy evaluation logic", IAM User Guide);
- a statement applies when its ``Principal`` (or ``NotPrincipal``), ``Action`` (``NotAction``), ``Resource``
  (``NotResource``) and every ``Condition`` match.

What it knows, from the IAM User Guide's "IAM JSON policy elements" pages, and nothing more:
- principals: ``"*"``, ``{"AWS": "*"}`` (everyone, services included), ``{"AWS": <account ID | arn:…:root>}`` (any
  principal of that account), ``{"AWS": <ARN>}``, ``{"Service": <name>}``; a list of each;
- actions: case-insensitive, with ``*`` and ``?``; resources: case-sensitive, with ``*`` and ``?``;
- condition operators ``String(Not)Equals``, ``String(Not)EqualsIgnoreCase``, ``String(Not)Like``,
  ``Arn(Not)Equals``, ``Arn(Not)Like`` (each of the six ARN parts matched on its own, wildcards allowed), ``Bool``
  and ``Null``, each with ``…IfExists``; condition key names case-insensitive; several values of one key match if
  any matches (a negated operator: if none does); several keys and operators all must match. A key missing from
  the request fails a positive operator and satisfies a negated one (``IfExists``: satisfies both).

Anything else (``Numeric…``, ``Date…``, ``IpAddress``, ``ForAllValues:``/``ForAnyValue:``, ``Federated``
principals) raises :class:`Unsupported`: the caller says it cannot tell, never guesses. Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ALLOW, EXPLICIT_DENY, IMPLICIT_DENY = "Allow", "ExplicitDeny", "ImplicitDeny"
_ARN_PARTS = 6


class Unsupported(ValueError):  # noqa: N818 - the evaluator's answer: it cannot decide this statement
    """A policy uses a form the evaluator does not evaluate."""


@dataclass(frozen=True)
class Request:
    """Who (``principal``: a service such as ``cloudwatch.amazonaws.com``, or an IAM ARN) calls ``action`` on
    ``resource``, with the request's condition keys (``context``: key -> value or values)."""

    principal: str
    action: str
    resource: str
    context: Mapping[str, str | list[str]] = field(default_factory=dict)

    @property
    def is_service(self) -> bool:
        return ":" not in self.principal

    def value(self, key: str) -> list[str] | None:
        for name, value in self.context.items():
            if name.lower() == key.lower():
                return value if isinstance(value, list) else [value]
        return None


def _listed(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def _glob(pattern: str, text: str, *, fold: bool = False) -> bool:
    """``*`` any run of characters, ``?`` one character, the rest literal."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, text, flags=re.IGNORECASE | re.DOTALL if fold else re.DOTALL) is not None


def _account(principal: str) -> str | None:
    parts = principal.split(":")
    return parts[4] if len(parts) >= _ARN_PARTS and parts[0] == "arn" else None


def _principal_matches(element: Any, request: Request) -> bool:
    if element == "*":
        return True
    if not isinstance(element, dict):
        raise Unsupported(f"principal {element!r}")
    for kind, values in element.items():
        for value in _listed(values):
            if kind == "AWS":
                if value == "*":
                    return True
                if request.is_service:
                    continue
                root = re.fullmatch(r"arn:[^:]+:iam::([0-9]{12}):root", str(value))
                account = root.group(1) if root else str(value) if re.fullmatch(r"[0-9]{12}", str(value)) else None
                if value == request.principal or (account is not None and account == _account(request.principal)):
                    return True
            elif kind == "Service":
                if request.is_service and str(value).lower() == request.principal.lower():
                    return True
            else:
                raise Unsupported(f"principal type {kind}")
    return False


def _arn_matches(pattern: str, arn: str) -> bool:
    """ArnEquals / ArnLike: each of the six colon-separated parts matched on its own (wildcards allowed)."""
    want, have = pattern.split(":", _ARN_PARTS - 1), arn.split(":", _ARN_PARTS - 1)
    if len(want) != _ARN_PARTS or len(have) != _ARN_PARTS:
        return False
    return all(_glob(w, h) for w, h in zip(want, have, strict=True))


def _string(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


_MATCHERS = {
    "StringEquals": lambda want, have: want == have,
    "StringEqualsIgnoreCase": lambda want, have: want.lower() == have.lower(),
    "StringLike": _glob,
    "ArnEquals": _arn_matches,
    "ArnLike": _arn_matches,
    "Bool": lambda want, have: want.lower() == have.lower(),
}
_NEGATED = {"StringNotEquals": "StringEquals", "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
            "StringNotLike": "StringLike", "ArnNotEquals": "ArnEquals", "ArnNotLike": "ArnLike"}


def _condition_matches(operator: str, key: str, wanted: Any, request: Request) -> bool:
    base = operator.removesuffix("IfExists")
    if_exists = base != operator
    have = request.value(key)
    if base == "Null":
        missing = have is None
        return any(_string(w).lower() == ("true" if missing else "false") for w in _listed(wanted))
    negated = base in _NEGATED
    matcher = _MATCHERS.get(_NEGATED.get(base, base))
    if matcher is None:
        raise Unsupported(f"condition operator {operator}")
    if have is None:
        return if_exists or negated
    hit = any(matcher(_string(w), _string(h)) for w in _listed(wanted) for h in have)
    return not hit if negated else hit


def _matches_any(patterns: Any, value: str, *, fold: bool) -> bool:
    return any(_glob(str(p), value, fold=fold) for p in _listed(patterns))


def statement_applies(statement: Mapping[str, Any], request: Request) -> bool:
    """Principal, action, resource and every condition of ``statement`` match ``request``."""
    if "Principal" in statement:
        if not _principal_matches(statement["Principal"], request):
            return False
    elif "NotPrincipal" in statement:
        if _principal_matches(statement["NotPrincipal"], request):
            return False
    if "Action" in statement and not _matches_any(statement["Action"], request.action, fold=True):
        return False
    if "NotAction" in statement and _matches_any(statement["NotAction"], request.action, fold=True):
        return False
    if "Resource" in statement and not _matches_any(statement["Resource"], request.resource, fold=False):
        return False
    if "NotResource" in statement and _matches_any(statement["NotResource"], request.resource, fold=False):
        return False
    for operator, keys in (statement.get("Condition") or {}).items():
        if operator.startswith(("ForAllValues:", "ForAnyValue:")):
            raise Unsupported(f"condition operator {operator}")
        for key, wanted in keys.items():
            if not _condition_matches(operator, key, wanted, request):
                return False
    return True


def statements(policy: Mapping[str, Any] | str) -> list[Mapping[str, Any]]:
    document = json.loads(policy) if isinstance(policy, str) else policy
    return _listed(document.get("Statement") or [])


def decide(policy: Mapping[str, Any] | str, request: Request) -> str:
    """:data:`ALLOW`, :data:`EXPLICIT_DENY` or :data:`IMPLICIT_DENY` for ``request`` under ``policy`` alone."""
    applying = [s for s in statements(policy) if statement_applies(s, request)]
    if any(s.get("Effect") == "Deny" for s in applying):
        return EXPLICIT_DENY
    return ALLOW if any(s.get("Effect") == "Allow" for s in applying) else IMPLICIT_DENY


def deciding(policy: Mapping[str, Any] | str, request: Request) -> Iterable[Mapping[str, Any]]:
    """The statements that apply to ``request`` (for saying which one allowed or denied it)."""
    return [s for s in statements(policy) if statement_applies(s, request)]
