"""The whole config file (``HyperPodConfig``): its sections and the rules that span them."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from . import gateway_rules  # also registers the cross-section rules of the gateways
from .base import (
    CrdPaths,
    DnsLabel,
    NoCrd,
    Strict,
    _raise_all,
)
from .capture import Capture
from .cluster import Cluster, Env
from .cross_rules import ConfigView, cross_problems
from .domain import Domain
from .endpoint import Endpoint
from .gateway import Gateway
from .observability import Observability
from .operator import Manifests, Operator
from .suggest import line_errors
from .warnings import WarningAcknowledgment


# ------------------------------------------------------------------------------------------------------------- config
class HyperPodConfig(Strict):
    """The whole config file."""

    crd_paths: ClassVar[CrdPaths] = {
        "api_version": NoCrd("the config file's own version"),
        "env": NoCrd("AWS side, not the custom resource"),
        "cluster": NoCrd("AWS side, not the custom resource"),
        "operator": NoCrd("how the operator is installed (add-on or chart values), not a custom resource field"),
        "manifests": NoCrd("how the stack delivers the manifests"),
        "namespaces": NoCrd("Namespace objects the stack owns"),
        "capture": NoCrd("AWS side: the capture bucket and key; the endpoints' spec.dataCapture.s3Uri points at "
                         "them"),
        "domain": NoCrd("AWS side: the zone and certificate; the endpoints' spec.tlsConfig / spec.dnsConfig point "
                        "at them"),
        "endpoints": NoCrd("one custom resource each"),
        "stack_name": NoCrd("AWS side, not the custom resource (the CloudFormation stack's name)"),
        "stack_layout": NoCrd("AWS side, not the custom resource (how the stack nests its templates)"),
        "acknowledge_warnings": NoCrd("the config's own warnings"),
        "observability": NoCrd("AWS side: dashboards, alarms and Prometheus rules over the endpoints"),
        "gateways": NoCrd("one InferenceGatewayConfig (v1alpha1) each, not a field of an endpoint's custom "
                          "resource"),
    }
    api_version: Literal["hyperpod-inference/v1"]
    """The config file's version: hyperpod-inference/v1."""
    env: Env | None = None
    """The account and region the stack deploys to (required by the app)."""
    cluster: Cluster
    """The existing HyperPod EKS cluster the stack installs into."""
    operator: Operator = Field(default_factory=Operator)
    """How the HyperPod inference operator and its dependencies are installed."""
    manifests: Manifests = Field(default_factory=Manifests)
    """How the Kubernetes objects reach the cluster."""
    namespaces: list[DnsLabel] = Field(default_factory=list)
    """Namespaces the stack creates and owns (deleted on destroy); an endpoint elsewhere needs its namespace to exist
    already."""
    capture: Capture | None = None
    """The capture bucket and key shared by every endpoint's data capture; absent = capture off everywhere."""
    domain: Domain | None = None
    """The Route 53 zone and ACM certificate for endpoint domain names."""
    endpoints: list[Endpoint] = Field(default_factory=list)
    """The model endpoints, one operator custom resource each."""
    gateways: list[Gateway] = Field(default_factory=list)
    """Inference Gateways (operator v3.6+): one InferenceGatewayConfig each, routing by model name to the endpoints'
    pods (docs/inference-gateway.md)."""
    stack_name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9-]*$", max_length=128)] | None = Field(
        default=None, description="The CloudFormation stack the app builds from this file. Default: HyperPodInference "
                                  "for one config file, HyperPodInference-<eksClusterName> for several "
                                  "(cdk synth -c config=a.yaml,b.yaml).")
    stack_layout: Literal["single", "perNamespace"] = Field(
        default="single", description="single: every resource in one template. perNamespace: one nested stack per "
                                      "namespace (and endpoint stackGroup) holding its manifests, roles and outputs, "
                                      "for fleets beyond one template's limits. Changing it on a deployed stack moves "
                                      "every endpoint's manifest, which deletes and re-creates the endpoints "
                                      "(docs/fleets.md).")
    observability: Observability = Field(default_factory=Observability)
    """Dashboards (on by default), alarms and Prometheus rules over the endpoints (docs/observability.md)."""

    acknowledge_warnings: list[WarningAcknowledgment] = Field(
        default_factory=list, description="Warnings acknowledged on purpose, each with its reason: {id, endpoint?, "
                                          "reason}. An acknowledged warning is no longer a warning (validate --strict "
                                          "and cdk synth --strict pass); validate and the synth show the reason "
                                          "instead. Without endpoint it covers the ID everywhere.")

    @model_validator(mode="wrap")
    @classmethod
    def _every_problem(cls, data: Any, handler: ModelWrapValidatorHandler[HyperPodConfig],
                       info: ValidationInfo) -> HyperPodConfig:
        """The rules across sections (:mod:`.cross_rules`) run on a valid file and, over the parts that validated,
        on a file with field errors too, so every problem is reported in one run."""
        try:
            config = handler(data)
        except ValidationError as err:
            if not isinstance(data, dict):
                raise
            extra = cross_problems(ConfigView.partial(data, info.context))
            if not extra:
                raise
            raise ValidationError.from_exception_data(cls.__name__, [*line_errors(err), *extra]) from None
        _raise_all(cls, cross_problems(ConfigView.of(config)))
        return gateway_rules.with_opt_ins(config)
