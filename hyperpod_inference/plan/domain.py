"""The custom domain, planned (:func:`plan_domain` -> :class:`DomainPlan`): the Route 53 zone and the ACM certificate
the endpoints' ``domainName`` values use, created or imported. Made with the first endpoint that has a domain name;
later names join its certificate and DNS grants."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import HyperPodConfig


@dataclass(frozen=True)
class DomainPlan:
    """The zone ``zone_name`` (imported by ``hosted_zone_id``, else created and retained) and the certificate
    (imported by ``certificate_arn``, else issued, a wildcard one with ``wildcard``)."""

    zone_name: str
    hosted_zone_id: str | None
    certificate_arn: str | None
    wildcard: bool | None
    construct_id: str = "Domain"


def plan_domain(config: HyperPodConfig) -> DomainPlan | None:
    """The domain of the stack; None without a ``domain`` section (the config then has no endpoint with a domain
    name)."""
    d = config.domain
    if d is None:
        return None
    return DomainPlan(d.zone_name, d.hosted_zone_id, d.certificate_arn, d.wildcard)
