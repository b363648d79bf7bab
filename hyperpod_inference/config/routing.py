"""How requests reach the model: the operator's intelligent routing, its KV cache (L1 / L2) and the ALB."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from ..facts import production as prod_facts
from .autoscaling import AutoScalingSpec
from .base import DnsLabel, Strict, Text, crd, crd_required


class IntelligentRoutingSpec(Strict):
    enabled: bool | None = crd("enabled")
    """Turn intelligent routing on."""
    routing_strategy: Literal[prod_facts.ROUTING_STRATEGIES] | None = crd("routingStrategy")  # type: ignore[valid-type]
    """How requests are routed; kvaware without a KV cache (kvCacheSpec enableL1Cache / enableL2Cache) is
    warned."""
    auto_scaling_spec: AutoScalingSpec | None = crd("autoScalingSpec")
    """Autoscaling of the router."""


class InferenceGateway(Strict):
    """The endpoint's opt-in to an Inference Gateway (operator v3.6 and later; exclusive with intelligent routing)."""

    enabled: bool = Field(False, json_schema_extra={"x-crd-path": "enabled"})
    """Serve the endpoint through an Inference Gateway (InferenceGatewayConfig) in its namespace."""
    name: DnsLabel | None = crd("name")
    """The InferenceGatewayConfig to join; absent: the operator names one ``inf-igw-<uuid>``."""


class L2CacheSpec(Strict):
    l2_cache_backend: Literal[prod_facts.L2_CACHE_BACKENDS] = crd_required(  # type: ignore[valid-type]
        "l2CacheBackend", description="redis or tieredstorage, lowercase (stricter than the CRD's unanchored, "
                                      "case-insensitive pattern).")
    l2_cache_local_url: Text | None = crd("l2CacheLocalUrl")
    """URL of the L2 cache."""


class KvCacheSpec(Strict):
    cache_config_file: Text | None = crd("cacheConfigFile")
    """An LMCache config file."""
    enable_l1_cache: bool | None = crd("enableL1Cache", alias="enableL1Cache")
    """Turn the in-memory L1 cache on."""
    enable_l2_cache: bool | None = crd("enableL2Cache", alias="enableL2Cache")
    """Turn the L2 cache on (needs l2CacheSpec)."""
    l2_cache_spec: L2CacheSpec | None = crd("l2CacheSpec", alias="l2CacheSpec")
    """The L2 backend."""

    @model_validator(mode="after")
    def _l2(self) -> KvCacheSpec:
        if self.enable_l2_cache and self.l2_cache_spec is None:
            raise PydanticCustomError("l2", "enableL2Cache: true needs l2CacheSpec (the L2 backend)")
        return self


class LoadBalancerSpec(Strict):
    health_check_path: Annotated[str, StringConstraints(pattern=prod_facts.HEALTH_CHECK_PATH,
                                                        max_length=1024)] | None = crd("healthCheckPath")
    """The ALB health check path."""
    routing_algorithm: Literal[prod_facts.ROUTING_ALGORITHMS] | None = crd(  # type: ignore[valid-type]
        "routingAlgorithm")
    """How the ALB spreads requests."""
    idle_timeout_seconds: Annotated[int, Field(ge=prod_facts.IDLE_TIMEOUT_RANGE[0],
                                               le=prod_facts.IDLE_TIMEOUT_RANGE[1])] | None = crd(
        "idleTimeoutSeconds", description="v3.3 and later")
