"""What every section model of the config shares: the strict base model, error helpers, the common field types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    StringConstraints,
    ValidationError,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..facts import rules
from ..facts import safety as safety_rules
from .production import _Strict

Loc = tuple[str | int, ...]


class Strict(_Strict):
    """camelCase keys, unknown keys rejected (with the nearest field name), immutable once validated."""


def _err(loc: Loc, message: str, value: Any = None) -> InitErrorDetails:
    return InitErrorDetails(type=PydanticCustomError("config", message), loc=loc, input=value)


def _raise_all(model: type[BaseModel], errors: list[InitErrorDetails]) -> None:
    if errors:
        raise ValidationError.from_exception_data(model.__name__, errors)


def _rule(check: Callable[[str], str | None]) -> AfterValidator:
    """A field validator from a rule function of ``facts.rules``: the config and the constructs run the same check."""

    def validate(value: str) -> str:
        problem = check(value)
        if problem:
            raise PydanticCustomError("rule", "{problem}", {"problem": problem})
        return value

    return AfterValidator(validate)


def _literal_prefix(prefix: Any) -> Any:
    problem = safety_rules.s3_prefix_problem(prefix) if isinstance(prefix, str) else None
    if problem:
        raise PydanticCustomError("prefix", problem)
    return prefix


def _safe_host_path(path: str | None) -> str | None:
    problem = None if path is None else safety_rules.host_path_problem(path)
    if problem:
        raise PydanticCustomError("host_path", problem)
    return path


DnsLabel = Annotated[str, StringConstraints(pattern=rules.DNS1123_LABEL, max_length=63)]
DnsSubdomain = Annotated[str, StringConstraints(pattern=rules.DNS1123_SUBDOMAIN, max_length=253)]
DomainName = Annotated[str, StringConstraints(pattern=rules.DOMAIN_NAME, max_length=253), _rule(rules.domain_name_problem)]
AbsolutePath = Annotated[str, StringConstraints(pattern=rules.ABSOLUTE_PATH, min_length=1, max_length=rules.HOST_PATH_MAX)]
BucketName = Annotated[str, StringConstraints(pattern=rules.S3_BUCKET_NAME, min_length=3, max_length=63),
                      _rule(rules.bucket_name_problem)]
RoleArn = Annotated[str, StringConstraints(pattern=rules.IAM_ROLE_ARN)]
ContentType = Annotated[str, StringConstraints(pattern=rules.CONTENT_TYPE, min_length=1, max_length=256)]



def _at(path: str) -> dict[str, Any]:
    return {"json_schema_extra": {"x-crd-path": path}}



def _bool_or_object(schema: dict[str, Any]) -> None:
    """JSON Schema of a field that takes ``true`` / ``false`` as a shorthand of its object."""
    ref = schema.pop("$ref", None)
    if ref is not None:
        schema["anyOf"] = [{"type": "boolean"}, {"$ref": ref}]

