"""The ``domain`` section: the Route 53 zone and ACM certificate of endpoint domain names."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import (
    StringConstraints,
)

from ..facts import rules
from .base import (
    CrdPaths,
    DomainName,
    NoCrd,
    Strict,
)


class Domain(Strict):
    """The DNS zone and certificate for endpoint domain names."""

    crd_paths: ClassVar[CrdPaths] = {
        "zone_name": NoCrd("AWS side, not the custom resource (the zone)"),
        "hosted_zone_id": NoCrd("not verbatim: the library derives spec.dnsConfig.hostedZoneId from it"),
        "certificate_arn": NoCrd("not verbatim: the library derives spec.tlsConfig.customCertificateConfig.acmArn "
                                 "from it"),
        "wildcard": NoCrd("AWS side, not the custom resource (the issued certificate's names)"),
    }
    zone_name: DomainName
    """The Route 53 zone every endpoint domainName lies in."""
    hosted_zone_id: Annotated[str, StringConstraints(pattern=rules.HOSTED_ZONE_ID)] | None = None
    """Import this hosted zone; absent creates a public zone named zoneName."""
    certificate_arn: Annotated[str, StringConstraints(pattern=rules.ACM_ARN_CRD)] | None = None
    """Import this ACM certificate (same region); absent issues one validated through the zone."""
    wildcard: bool | None = None
    """Issued certificate only: cover *.zoneName instead of each endpoint's name."""


