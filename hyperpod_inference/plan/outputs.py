"""The stack outputs the plan names: each endpoint's status and invoke commands (:class:`OutputPlan`), and the
construct ids of the outputs added where their values are made (the check's summary, a folded endpoint's one
output, a nested stack's pointer to its outputs). The commands come from :mod:`.commands`."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import Endpoint
from ..facts import naming
from . import commands


@dataclass(frozen=True)
class OutputPlan:
    """One stack output: its construct id, value and description."""

    construct_id: str
    value: str
    description: str


def output_key(endpoint: Endpoint) -> str:
    return f"{naming.pascal(endpoint.namespace)}{naming.pascal(endpoint.name)}"


def endpoint_outputs(endpoint: Endpoint, region: str) -> tuple[OutputPlan, ...]:
    """The endpoint's status output and (with a domain name or SageMaker endpoint) its invoke output; the
    verification's summary output is added where the check is made (:func:`verification_output_id`)."""
    key, where = output_key(endpoint), f"{endpoint.namespace}/{endpoint.name}"
    outs = [OutputPlan(f"{key}Status", commands.status_command(endpoint), f"{where}: status and events (and DNS/TLS)")]
    invoke = commands.invoke_output(endpoint, region=region)
    if invoke:
        outs.append(OutputPlan(f"{key}Invoke", invoke, f"{where}: URL and invoke command"))
    return tuple(outs)


def verification_output_id(key: str) -> str:
    """The post-deploy check's summary output of the endpoint of output key ``key``."""
    return f"{key}Verification"


def folded_output_id(key: str) -> str:
    """The one output an endpoint's outputs fold into when its template is over CloudFormation's 200."""
    return f"{key}Outputs"


def nested_stack_output_id(namespace: str, group: str | None) -> str:
    """The enclosing stack's output pointing at the outputs of the nested stack of ``namespace`` (and ``group``)."""
    return f"Namespace{naming.pascal(namespace)}" + (f"Group{naming.pascal(group)}" if group else "") + "StackOutputs"
