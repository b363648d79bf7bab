"""The ``gateways`` section: one HyperPod Inference Gateway (an ``InferenceGatewayConfig`` v1alpha1) each, in the
gateway's own field names (FACTS.md section 13; ``facts.gateway`` has the sources).

:class:`GatewaySpec` is the custom resource's ``spec`` as the library writes it; :func:`gateway_spec_schema` is its
JSON Schema, closed as the gateway's own schema is. The config's :class:`Gateway` adds the object's ``name`` and
``namespace``, ``external`` (a gateway the stack does not create, that endpoints may name) and, per scheduler, the
library's shorthand ``endpoint:`` for ``modelSelector`` + ``targetPort`` + ``modelName``. The CRD's text is not
public, so the shapes follow the documentation's field list; where it gives no shape (``podDefaults``' Kubernetes
types, ``env``) the value is taken as a mapping or list and not checked further.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StringConstraints, model_validator

from ..facts import gateway as facts
from ..facts import rules
from .base import DnsLabel, DnsSubdomain, NoCrd, NonNegative, Positive, Problems, Strict, _err, _raise_all

_NOT_THE_ENDPOINT = NoCrd("a field of the InferenceGatewayConfig (v1alpha1), not of the endpoint's custom resource")

ModelName = Annotated[str, StringConstraints(min_length=1, max_length=facts.MODEL_NAME_MAX)]
Port = Annotated[int, Field(ge=1, le=65535)]
HttpsUrl = Annotated[str, StringConstraints(pattern=r"^https://\S+$", max_length=2048)]


class _GatewayModel(Strict):
    """A model of the gateway's resource: every field is the gateway's, none the endpoint's CRD path."""

    crd_paths: ClassVar[dict[str, Any]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.crd_paths = {name: _NOT_THE_ENDPOINT for name in cls.model_fields}


# ------------------------------------------------------------------------------------------------- shared pieces
class GatewayTls(_GatewayModel):
    acm_arn: Annotated[str, StringConstraints(pattern=rules.ACM_ARN_CRD)] | None = None
    """An existing ACM certificate; absent ({}): the controller issues one with cert-manager and imports it into
    ACM."""


class DefaultBackend(_GatewayModel):
    name: DnsLabel
    """The Service that receives requests the router matches to no scheduler."""
    port: Port | None = None
    """Its port (default 8000)."""


class Bbr(_GatewayModel):
    enabled: bool
    """Run the body-based router (required when there is more than one scheduler)."""
    replicas: Positive | None = None
    """Router replicas (default 2)."""
    default_backend: DefaultBackend | None = None
    """Where requests for no known model go."""
    max_request_body_bytes: Annotated[int, Field(ge=1, le=facts.BBR_MAX_REQUEST_BODY_BYTES)] | None = None
    """The most of a request body the router buffers to read its model (default and maximum 256 MiB)."""


class RemoteJwks(_GatewayModel):
    uri: HttpsUrl
    """The HTTPS JWKS endpoint that publishes the issuer's signing keys."""


class RequiredClaim(_GatewayModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=facts.CLAIM_VALUE_LENGTH_MAX)]
    """The claim."""
    value_type: Literal[facts.CLAIM_VALUE_TYPES]  # type: ignore[valid-type]
    """String or StringArray."""
    values: Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=facts.CLAIM_VALUE_LENGTH_MAX)]],
                      Field(min_length=1, max_length=facts.CLAIM_VALUES_MAX)]
    """The accepted values."""


class JwtProvider(_GatewayModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=253)]
    """A unique name for the provider."""
    issuer: HttpsUrl
    """The OIDC issuer URL the token's iss claim must equal."""
    remote_jwks: RemoteJwks = Field(alias="remoteJWKS")
    """Where the signing keys are published."""
    audiences: Annotated[list[Annotated[str, StringConstraints(min_length=1)]],
                         Field(min_length=1, max_length=facts.JWT_AUDIENCES_MAX)] | None = None
    """Accepted aud claim values (at least one of audiences and requiredClaims)."""
    required_claims: Annotated[list[RequiredClaim], Field(min_length=1, max_length=facts.JWT_REQUIRED_CLAIMS_MAX)] | \
        None = None
    """Claims a token must carry (requests are denied unless they match)."""

    @model_validator(mode="after")
    def _audience_or_claims(self) -> JwtProvider:
        if self.audiences is None and self.required_claims is None:
            _raise_all(type(self), [_err(("audiences",), "give audiences or requiredClaims (at least one)")])
        return self


class Jwt(_GatewayModel):
    provider: JwtProvider
    """The JWT provider that authenticates requests."""


class Auth(_GatewayModel):
    jwt: Jwt
    """JWT bearer-token authentication (recommended: without auth the gateway accepts any request that reaches
    it)."""


class MetricsSwitch(_GatewayModel):
    enabled: bool
    """Inject the OpenTelemetry metrics sidecar (default true)."""


class GatewayObservability(_GatewayModel):
    metrics: MetricsSwitch
    """The metrics sidecar of the router and endpoint pickers."""


class PodDefaults(_GatewayModel):
    resources: dict[str, Any] | None = None
    """Kubernetes ResourceRequirements of the router and endpoint picker pods."""
    node_selector: dict[str, str] | None = None
    """Their node selector."""
    tolerations: list[dict[str, Any]] | None = None
    """Their tolerations (Kubernetes Toleration objects)."""
    affinity: dict[str, Any] | None = None
    """Their affinity (a Kubernetes Affinity)."""
    labels: dict[str, str] | None = None
    """Labels added to their pods."""
    annotations: dict[str, str] | None = None
    """Annotations added to their pods."""
    env: list[dict[str, Any]] | None = None
    """Environment variables (Kubernetes EnvVar objects)."""
    env_from: list[dict[str, Any]] | None = None
    """Environment sources (Kubernetes EnvFromSource objects)."""


class Weights(_GatewayModel):
    queue: NonNegative | None = None
    """Pending request queue depth (default 2)."""
    kv_cache: NonNegative | None = None
    """KV cache utilization (default 2)."""
    prefix: NonNegative | None = None
    """Prefix-cache affinity (default 3)."""
    running_requests: NonNegative | None = None
    """Requests in flight on a pod."""
    lora_affinity: NonNegative | None = None
    """LoRA adapter already loaded on a pod."""
    predicted_latency: NonNegative | None = None
    """Predicted request latency."""
    lru: NonNegative | None = None
    """Least-recently-used spreading (scheduler llm-d only)."""


class ConfigMapRef(_GatewayModel):
    name: DnsSubdomain
    """A ConfigMap in the gateway's namespace holding an endpoint picker configuration."""
    key: Annotated[str, StringConstraints(min_length=1, max_length=253)] | None = None
    """Its key (default default-plugins.yaml)."""


class SelectorRequirement(_GatewayModel):
    key: Annotated[str, StringConstraints(min_length=1, max_length=317)]
    """The label key."""
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    """How the values apply."""
    values: list[str] | None = None
    """The values (In, NotIn)."""


class ModelSelector(_GatewayModel):
    match_labels: dict[str, str] | None = None
    """Labels the model-serving pods carry."""
    match_expressions: list[SelectorRequirement] | None = None
    """Label requirements of the model-serving pods."""


# ---------------------------------------------------------------------------------------------------- schedulers
class _SchedulerFields(_GatewayModel):
    name: Annotated[str, StringConstraints(pattern=rules.DNS1123_LABEL, max_length=facts.SCHEDULER_NAME_MAX)]
    """Names the scheduler's InferencePool, HTTPRoute and endpoint picker."""
    app_protocol: Literal[facts.APP_PROTOCOLS] | None = None  # type: ignore[valid-type]
    """http (default) or kubernetes.io/h2c."""
    scheduler: Literal[facts.SCHEDULERS] | None = None  # type: ignore[valid-type]
    """The endpoint picker: llm-d (default) or epp."""
    engine_type: Literal[facts.ENGINE_TYPES] | None = None  # type: ignore[valid-type]
    """The model server whose metrics the picker reads: vllm (default) or sglang."""
    weights: Weights | None = None
    """Scoring weights (not with configMapRef)."""
    config_map_ref: ConfigMapRef | None = None
    """A custom endpoint picker configuration (not with weights)."""
    replicas: Positive | None = None
    """Endpoint picker replicas (default 2; more than 1 runs with leader election)."""
    env: list[dict[str, Any]] | None = None
    """Environment variables of the endpoint picker container (Kubernetes EnvVar objects)."""
    env_from: list[dict[str, Any]] | None = None
    """Environment sources of the endpoint picker container."""
    lora_adapters: Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=facts.LORA_ADAPTER_NAME_MAX)]],
                             Field(max_length=facts.LORA_ADAPTERS_MAX)] | None = None
    """LoRA adapter names served behind this scheduler's model."""
    route_timeout: Annotated[str, StringConstraints(pattern=facts.DURATION)] | None = None
    """The HTTPRoute's request timeout, a Gateway API duration (30s, 5m; 0s = none)."""
    log_level: Annotated[int, Field(ge=0, le=facts.LOG_LEVEL_MAX)] | None = None
    """Endpoint picker log verbosity (0-5)."""

    @model_validator(mode="after")
    def _scheduler_rules(self) -> _SchedulerFields:
        _raise_all(type(self), list(scheduler_problems(self)))
        return self


def scheduler_problems(s: _SchedulerFields) -> Problems:
    """weights and configMapRef exclude each other; lru is an llm-d weight."""
    if s.weights is not None and s.config_map_ref is not None:
        yield _err(("configMapRef",), "weights and configMapRef are mutually exclusive: give one")
    scheduler = s.scheduler or facts.DEFAULT_SCHEDULER
    for weight in facts.LLM_D_ONLY_WEIGHTS:
        if s.weights is not None and getattr(s.weights, weight) is not None and scheduler != "llm-d":
            yield _err(("weights", weight), f"is valid only with scheduler: llm-d (this scheduler is {scheduler})")


class SchedulerSpec(_SchedulerFields):
    """One entry of the resource's ``spec.schedulers``."""

    model_selector: ModelSelector
    """The model-serving pods this scheduler routes to."""
    model_name: ModelName
    """The model the request body's model field (or header x-gateway-model-name) names; unique in the gateway."""
    target_port: Port | None = None
    """The pods' port (default 8000)."""


class Scheduler(_SchedulerFields):
    """One scheduler of a configured gateway: ``endpoint`` or ``modelSelector`` + ``modelName``."""

    endpoint: DnsSubdomain | None = None
    """An endpoint of this config in the gateway's namespace: selects its pods (app=<its name>), its port and its
    served model name. Instead of modelSelector; modelName and targetPort may still override."""
    model_selector: ModelSelector | None = None
    """The model-serving pods (without endpoint)."""
    model_name: ModelName | None = None
    """The model the request body names (without endpoint: required)."""
    target_port: Port | None = None
    """The pods' port (default 8000; with endpoint: the endpoint's port)."""

    @model_validator(mode="after")
    def _target(self) -> Scheduler:
        problems = []
        if self.endpoint is not None and self.model_selector is not None:
            problems.append(_err(("modelSelector",), "endpoint and modelSelector are mutually exclusive: give one"))
        if self.endpoint is None:
            for key, value in (("modelSelector", self.model_selector), ("modelName", self.model_name)):
                if value is None:
                    problems.append(_err((key,), "required without endpoint"))
        _raise_all(type(self), problems)
        return self


# ------------------------------------------------------------------------------------------------------- gateways
class _GatewayFields(_GatewayModel):
    bbr: Bbr | None = None
    """The body-based router; enabled is required with more than one scheduler (absent: written disabled)."""
    auth: Auth | None = None
    """Request authentication (strongly recommended)."""
    observability: GatewayObservability | None = None
    """The metrics sidecar switch."""
    pod_defaults: PodDefaults | None = None
    """Pod settings of the router and endpoint pickers."""


def gateway_problems(bbr: Bbr | None, schedulers: list[Any] | None) -> Problems:
    """More than one scheduler needs the router; scheduler names and model names are unique."""
    schedulers = schedulers or []
    if len(schedulers) > 1 and not (bbr is not None and bbr.enabled):
        yield _err(("bbr", "enabled"), f"must be true with {len(schedulers)} schedulers ({facts.BBR_REQUIRED_MESSAGE})")
    seen: dict[str, int] = {}
    models: dict[str, int] = {}
    for i, s in enumerate(schedulers):
        if s.name in seen:
            yield _err(("schedulers", i, "name"), f"{s.name!r} is also schedulers[{seen[s.name]}].name")
        seen.setdefault(s.name, i)
        if s.model_name is not None:
            if s.model_name in models:
                yield _err(("schedulers", i, "modelName"),
                           f"{s.model_name!r} is also schedulers[{models[s.model_name]}].modelName (must be unique)")
            models.setdefault(s.model_name, i)


class GatewaySpec(_GatewayFields):
    """The ``spec`` of an ``InferenceGatewayConfig`` as the library writes it."""

    bbr: Bbr
    """The body-based router."""
    tls: GatewayTls
    """HTTPS termination (required: there is no HTTP-only mode)."""
    schedulers: Annotated[list[SchedulerSpec], Field(min_length=facts.SCHEDULERS_MIN, max_length=facts.SCHEDULERS_MAX)]
    """One per model."""

    @model_validator(mode="after")
    def _spec_rules(self) -> GatewaySpec:
        _raise_all(type(self), list(gateway_problems(self.bbr, self.schedulers)))
        return self


class Gateway(_GatewayFields):
    """A gateway the stack creates (an InferenceGatewayConfig in ``namespace``), or with ``external: true`` one
    that exists already and that endpoints name."""

    name: DnsLabel
    """The InferenceGatewayConfig's name (endpoints name it in inferenceGateway.name)."""
    namespace: DnsLabel
    """Its namespace: the namespace of the endpoints it routes to."""
    external: bool = False
    """Created elsewhere (another stack, the operator, kubectl): the stack creates nothing for it; endpoints may name
    it. Takes only name and namespace."""
    tls: GatewayTls | None = None
    """HTTPS termination: {} (a certificate issued by the controller) or {acmArn}; absent: the domain section's
    certificate."""
    schedulers: Annotated[list[Scheduler], Field(max_length=facts.SCHEDULERS_MAX)] | None = None
    """One per model (required unless external)."""

    @model_validator(mode="after")
    def _gateway_rules(self) -> Gateway:
        problems = []
        if self.external:
            for key in ("tls", "bbr", "schedulers", "auth", "observability", "pod_defaults"):
                if getattr(self, key) is not None:
                    alias = type(self).model_fields[key].alias or key
                    problems.append(_err((alias,), "an external gateway takes only name and namespace"))
        elif not self.schedulers:
            problems.append(_err(("schedulers",), f"at least {facts.SCHEDULERS_MIN} scheduler is required"))
        else:
            problems += gateway_problems(self.bbr, self.schedulers)
        _raise_all(type(self), problems)
        return self


# ------------------------------------------------------------------------------------------------------ the schema
def _conditionals(schema: dict[str, Any]) -> None:
    """The rules a JSON Schema can state, as the gateway's admission states them."""
    defs = schema["$defs"]
    defs["SchedulerSpec"]["allOf"] = [
        {"not": {"required": ["weights", "configMapRef"]}},
        {"if": {"required": ["scheduler"], "properties": {"scheduler": {"const": "epp"}}},
         "then": {"properties": {"weights": {"not": {"required": list(facts.LLM_D_ONLY_WEIGHTS)}}}}},
    ]
    schema["allOf"] = [{"if": {"properties": {"schedulers": {"minItems": 2}}},
                        "then": {"properties": {"bbr": {"properties": {"enabled": {"const": True}}}}}}]


def gateway_spec_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of an ``InferenceGatewayConfig``'s ``spec`` as the library writes it: closed
    (unknown fields refused), ``tls`` and ``bbr`` required, the router with more than one scheduler, ``weights``
    and ``configMapRef`` exclusive, ``lru`` not with ``epp``. Unique model names are not stated."""
    schema = copy.deepcopy(GatewaySpec.model_json_schema(by_alias=True, mode="validation"))
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"{facts.KIND} ({facts.API_VERSION}) spec"
    _conditionals(schema)
    return schema
