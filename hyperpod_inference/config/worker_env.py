"""The worker's environment: ``env`` values, each a string or ``valueFrom`` (core/v1 EnvVarSource)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import PlainValidator, StringConstraints, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from ..facts import production as prod_facts
from .base import Quantity, Strict, Text, crd, crd_required

EnvName = Annotated[str, StringConstraints(pattern=prod_facts.ENV_NAME)]


class KeyRef(Strict):
    name: Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
                                           max_length=253)] = crd_required("name")
    """The Secret or ConfigMap."""
    key: Annotated[str, StringConstraints(pattern=r"^[-._a-zA-Z0-9]+$", max_length=253)] = crd_required("key")
    """The key in it."""
    optional: bool | None = crd("optional")
    """Allow it to be missing."""


class FieldRef(Strict):
    field_path: Text = crd_required("fieldPath")
    """The pod field, e.g. metadata.name."""
    api_version: Text | None = crd("apiVersion")
    """Its API version."""


class ResourceFieldRef(Strict):
    resource: Text = crd_required("resource")
    """The resource, e.g. limits.cpu."""
    container_name: Text | None = crd("containerName")
    """The container."""
    divisor: Quantity | None = crd("divisor")
    """Unit of the value."""


class EnvVarSource(Strict):
    secret_key_ref: KeyRef | None = crd("secretKeyRef")
    """A key of a Secret."""
    config_map_key_ref: KeyRef | None = crd("configMapKeyRef")
    """A key of a ConfigMap."""
    field_ref: FieldRef | None = crd("fieldRef")
    """A field of the pod."""
    resource_field_ref: ResourceFieldRef | None = crd("resourceFieldRef")
    """A resource of the container."""

    @model_validator(mode="after")
    def _one(self) -> EnvVarSource:
        given = [n for n in ("secret_key_ref", "config_map_key_ref", "field_ref", "resource_field_ref")
                 if getattr(self, n) is not None]
        if len(given) != 1:
            raise PydanticCustomError("valueFrom", "give exactly one of secretKeyRef, configMapKeyRef, fieldRef, "
                                      "resourceFieldRef")
        return self


class EnvFrom(Strict):
    """``env: {NAME: {valueFrom: ...}}`` (InferenceEndpointConfig only)."""

    value_from: EnvVarSource = crd_required("valueFrom")
    """Where the value comes from."""


def _env_value(v: Any) -> str | EnvFrom:
    # A plain validator (not a str | EnvFrom union) so errors name env.<NAME>.valueFrom..., not the union's branches.
    if isinstance(v, (str, EnvFrom)):
        return v
    if isinstance(v, dict):
        return EnvFrom.model_validate(v)
    raise PydanticCustomError("env", "must be a string or {valueFrom: {secretKeyRef | configMapKeyRef | fieldRef | "
                              "resourceFieldRef}}")


EnvValue = Annotated[Any, PlainValidator(_env_value), WithJsonSchema({"anyOf": [
    {"type": "string"},
    {"type": "object", "required": ["valueFrom"], "additionalProperties": False,
     "properties": {"valueFrom": {"type": "object", "description": "core/v1 EnvVarSource (one of secretKeyRef, "
                                                                  "configMapKeyRef, fieldRef, resourceFieldRef)"}}},
]})]
