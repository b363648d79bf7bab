"""The plan: every decision of the stack, as frozen plain values, made from the config without jsii.

``plan_config`` plans a whole config (:class:`~.stack.ConfigPlan`): what the stack decides before any endpoint
(:mod:`.stack`: delivery, namespaces, :mod:`.operator`, :mod:`.capture`, :mod:`.domain`, warnings), each endpoint's
plan (:mod:`.endpoints`, with its NVMe cache from :mod:`.cache` and its outputs from :mod:`.outputs` and
:mod:`.commands`), what the endpoints share (:mod:`.shared`), the observability over them (:mod:`.observability`) and
what the stack owns (:mod:`.ownership`). :mod:`.context` holds what a plan depends on beyond the config and where the
pieces go.

``HyperPodInference`` realizes a plan: the AWS side, then the Kubernetes side from the plan plus the AWS values, then
delivery. The plan imports the config and the facts only (no aws_cdk, no jsii, no cdk8s), so wiring is tested in
milliseconds; ``doctor`` reads the same plan.
"""

from .context import PlanContext
from .endpoints import EndpointPlan, plan_endpoint, token_secret_ref
from .shared import SharedPlan, plan_shared
from .stack import ConfigPlan, StackPlan, plan_config, plan_stack

__all__ = ["ConfigPlan", "EndpointPlan", "PlanContext", "SharedPlan", "StackPlan", "plan_config", "plan_endpoint",
           "plan_shared", "plan_stack", "token_secret_ref"]
