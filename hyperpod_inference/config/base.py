"""The bottom of the config: the strict base model every model of the file derives from, how a field names its CRD
path and description in the schema, the error helpers, and the field types the sections share. It imports nothing of
``config/`` but :mod:`.suggest` ("did you mean").

Every field carries its CRD path as schema data (``x-crd-path``): relative to the object holding the model (so one
model serves every place the CRD repeats its shape, e.g. ``autoScalingSpec`` at the top level, in
``intelligentRoutingSpec`` and in ``pdSpec.autoScalingSpec``), or absolute when it starts with ``spec.``; a field no
CRD path receives says why (:class:`NoCrd`). The operator's fields keep the operator's own names and shapes
(InferenceEndpointConfig v1 and JumpStartModel v1), so a block can be pasted from the operator's documentation onto
an endpoint, and have no default the resource would receive: a field is written only when the user sets it, so the
API server applies the CRD's defaults to the rest.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import textwrap
from collections.abc import Callable, Iterator
from typing import Annotated, Any, NamedTuple

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    StringConstraints,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..facts import production as prod_facts
from ..facts import rules
from ..facts import safety as safety_rules
from .suggest import with_suggestions

Loc = tuple[str | int, ...]
#: What a rule yields: each problem it finds, with its path.
Problems = Iterator[InitErrorDetails]


# ------------------------------------------------------------------------------------------ schema data of a field
class NoCrd(NamedTuple):
    """A field no CRD path receives, and why (``x-crd-path: null`` with ``x-crd-path-reason`` in the schema)."""

    reason: str


CrdPaths = dict[str, "str | NoCrd"]


@functools.cache
def attribute_docstrings(cls: type) -> dict[str, str]:
    """Field name -> the docstring written under it in ``cls``'s own body (``x: int``, then a string on its own
    line), cleaned as ``inspect.cleandoc`` does. Read from the source only when a schema is made, so that loading a
    config does not parse the source of every model."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    return {prev.target.id: inspect.cleandoc(node.value.value) for prev, node in itertools.pairwise(body)
            if isinstance(prev, ast.AnnAssign) and isinstance(prev.target, ast.Name) and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def crd_schema_extra(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """Schema data of a model: each field's description from its attribute docstring (in ``cls`` or the model it
    inherits the field from) unless the field names one, and from the model's ``crd_paths`` table (for fields
    without ``crd()``): ``x-crd-path`` is the CRD path, or null with ``x-crd-path-reason``."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if issubclass(klass, BaseModel) and klass is not BaseModel:
            docs.update(attribute_docstrings(klass))
    table: CrdPaths = cls.__dict__.get("crd_paths", {})
    properties = schema.get("properties", {})
    for name, field in cls.model_fields.items():
        prop = properties.get(field.alias or name)
        if prop is None:
            continue
        if field.description is None and name in docs:
            prop["description"] = docs[name]
        if name not in table or "x-crd-path" in prop:
            continue
        entry = table[name]
        if isinstance(entry, NoCrd):
            prop.update({"x-crd-path": None, "x-crd-path-reason": entry.reason})
        else:
            prop["x-crd-path"] = entry


SCHEMA_DOCS: Any = {"json_schema_extra": crd_schema_extra}


def crd(path: str, *, description: str | None = None, alias: str | None = None, **kw: Any) -> Any:
    """An optional field mapped to CRD path ``path`` (see the module docstring)."""
    extra: dict[str, Any] = {"x-crd-path": path}
    return Field(default=None, json_schema_extra=extra, description=description, alias=alias, **kw)


def crd_required(path: str, *, description: str | None = None, alias: str | None = None, **kw: Any) -> Any:
    return Field(json_schema_extra={"x-crd-path": path}, description=description, alias=alias, **kw)


def _at(path: str) -> dict[str, Any]:
    return {"json_schema_extra": {"x-crd-path": path}}


def _bool_or_object(schema: dict[str, Any]) -> None:
    """JSON Schema of a field that takes ``true`` / ``false`` as a shorthand of its object."""
    ref = schema.pop("$ref", None)
    if ref is not None:
        schema["anyOf"] = [{"type": "boolean"}, {"$ref": ref}]


# ------------------------------------------------------------------------------------------------ the base model
class Strict(BaseModel):
    """camelCase keys, unknown keys rejected (with the nearest field name), immutable once validated: the base of
    every model of the config."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", frozen=True, populate_by_name=False,
                              regex_engine="python-re", **SCHEMA_DOCS)

    @model_validator(mode="wrap")
    @classmethod
    def _unknown_keys(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        """An unknown key gets "did you mean" with this model's nearest field, whoever validates the model
        (``Endpoint.model_validate({...})`` as much as the loader)."""
        try:
            return handler(data)
        except ValidationError as err:
            suggested = with_suggestions(cls, err)
            if suggested is None:
                raise
            raise suggested from None


def dump(model: BaseModel | None) -> Any:
    """A model as the CRD's JSON: camelCase, only what the user set."""
    if model is None:
        return None
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def crd_values(model: BaseModel, at: str) -> Iterator[tuple[str, Loc]]:
    """Each CRD path ``model`` (written at CRD path ``at``) gives a value, with that value's path in the config,
    outermost first: every field that names a CRD path (:func:`crd`, ``_at``, or a string of the model's
    ``crd_paths``) and is not None, then the fields of the models it holds (the items of a list at the list's CRD
    path). A field the library derives (:class:`NoCrd`) is not followed."""
    table: CrdPaths = type(model).__dict__.get("crd_paths", {})
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        path = extra.get("x-crd-path", table.get(name))
        if value is None or not isinstance(path, str):
            continue
        path = path if path.startswith("spec.") else f"{at}.{path}"
        loc: Loc = (info.alias or name,)
        yield path, loc
        items = enumerate(value) if isinstance(value, list) else [(None, value)]
        for index, item in items:
            if isinstance(item, BaseModel):
                for inner, inner_loc in crd_values(item, path):
                    yield inner, (*loc, *(() if index is None else (index,)), *inner_loc)


def config_path(loc: Loc) -> str:
    """``("autoScalingSpec", "cloudWatchTriggerList", 0)`` -> ``autoScalingSpec.cloudWatchTriggerList[0]``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


# ------------------------------------------------------------------------------------------------------- errors
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


# ----------------------------------------------------------------------------------------------- shared field types
DnsLabel = Annotated[str, StringConstraints(pattern=rules.DNS1123_LABEL, max_length=63)]
DnsSubdomain = Annotated[str, StringConstraints(pattern=rules.DNS1123_SUBDOMAIN, max_length=253)]
DomainName = Annotated[str, StringConstraints(pattern=rules.DOMAIN_NAME, max_length=253), _rule(rules.domain_name_problem)]
AbsolutePath = Annotated[str, StringConstraints(pattern=rules.ABSOLUTE_PATH, min_length=1, max_length=rules.HOST_PATH_MAX)]
BucketName = Annotated[str, StringConstraints(pattern=rules.S3_BUCKET_NAME, min_length=3, max_length=63),
                      _rule(rules.bucket_name_problem)]
RoleArn = Annotated[str, StringConstraints(pattern=rules.IAM_ROLE_ARN)]
JsmRoleArn = Annotated[str, StringConstraints(pattern=prod_facts.JSM_ROLE_ARN, min_length=prod_facts.ROLE_ARN_LENGTH[0],
                                              max_length=prod_facts.ROLE_ARN_LENGTH[1])]
ContentType = Annotated[str, StringConstraints(pattern=rules.CONTENT_TYPE, min_length=1, max_length=256)]
NonNegative = Annotated[int, Field(ge=0, le=2**31 - 1)]
Positive = Annotated[int, Field(ge=1, le=2**31 - 1)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
Quantity = Annotated[str, StringConstraints(pattern=prod_facts.QUANTITY, max_length=64)] | Annotated[int, Field(ge=0)]
ResourceName = Annotated[str, StringConstraints(pattern=prod_facts.RESOURCE_NAME, max_length=253)]
LabelKey = Annotated[str, StringConstraints(pattern=prod_facts.LABEL_KEY, max_length=317)]
