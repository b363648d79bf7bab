"""Custom domain, AWS side: a Route 53 hosted zone and an ACM certificate for the endpoints' domain names.

The inference operator attaches the certificate to the endpoint's ALB and writes the endpoint's DNS records
(an A alias to the ALB plus a TXT ownership record) into the hosted zone. This construct provides the zone and the
certificate (created or imported) and grants the operator's execution role exactly what it needs on them:

- ``grant_certificate_read``: ``acm:DescribeCertificate`` / ``acm:GetCertificate`` on this one certificate;
- ``grant_dns_management``: read the zone, and change only A and TXT records named exactly an endpoint domain name
  in this one zone (never a name below it: ``*.<name>`` would reach every record under an apex name).

A created hosted zone is retained on delete: ACM's DNS validation records stay in it, and a non-empty zone cannot be
deleted. A created zone is only reachable once its parent zone delegates to it (NS records); until then ACM cannot
validate the certificate and the deployment waits. See :func:`delegation_instructions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_iam as iam
from aws_cdk import aws_route53 as route53
from constructs import Construct

from ..facts import rules
from .lazy import is_unresolved, lazy, literal_partition

# The rules (domain names, zone ID, certificate ARN, what one certificate carries) are in facts/rules.py.
ACM_MAX_NAMES_PER_CERTIFICATE = rules.ACM_MAX_NAMES_PER_CERTIFICATE
AUTO_WILDCARD_ABOVE = rules.AUTO_WILDCARD_ABOVE
certificate_names = rules.certificate_names

#: DNS record types the operator writes for an endpoint (A alias to the ALB, TXT ownership record).
OPERATOR_RECORD_TYPES = ("A", "TXT")


def delegation_instructions(zone_name: str) -> str:
    """Text for a stack output: what to do when the stack created the hosted zone for ``zone_name``."""
    return (
        f"The stack created the public hosted zone {zone_name}. Until the parent zone delegates to it, nothing "
        f"resolves in it and ACM cannot validate the certificate: the deployment waits on the certificate "
        f"(ACM gives up after 72 hours). While it waits, look up the zone's name servers "
        f"(aws route53 list-hosted-zones-by-name --dns-name {zone_name}, then aws route53 get-hosted-zone --id <id>) "
        f"and add an NS record set named {zone_name} with those four name servers in the parent zone "
        f"(or at the domain registrar for a registered domain). The stack output NameServers lists them once "
        f"the deployment has finished."
    )



class CustomDomain(Construct):
    """A hosted zone and an ACM certificate for the endpoints' custom domain names, created or imported.

    :param zone_name: the hosted zone's name, e.g. ``example.com`` (lowercase, no trailing dot)
    :param domain_names: the endpoints' domain names; each inside the zone, specific (no wildcard), no duplicates
    :param hosted_zone_id: ``None`` (default) creates a public hosted zone, retained on delete; an ID imports one
    :param certificate_arn: ``None`` (default) issues an ACM certificate in the stack's region, DNS-validated in
        the zone; an ARN imports one (same region as the stack: the operator requires it)
    :param wildcard: only for an issued certificate. ``None`` (default): ``*.<zone>`` + apex when there are more
        than 9 endpoint names, else the names themselves; ``True``: always the wildcard form; ``False``: never
        (more than 9 names is then an error). Names deeper than one label under the zone are added to the wildcard
        certificate as subject alternative names. ACM's default quota is 10 names per certificate.

    Raises ``ValueError`` listing every problem in the props (unresolved tokens are not checked).
    """

    def __init__(self, scope: Construct, construct_id: str, *, zone_name: str, domain_names: Sequence[str],
                 hosted_zone_id: str | None = None, certificate_arn: str | None = None,
                 wildcard: bool | None = None, zone: route53.IHostedZone | None = None,
                 certificate: acm.ICertificate | None = None) -> None:
        super().__init__(scope, construct_id)
        domain_names = list(domain_names)
        self._validate(zone_name, domain_names, hosted_zone_id, certificate_arn, wildcard)
        self._validate_objects(zone_name, zone, hosted_zone_id, certificate, certificate_arn, wildcard)

        self.zone_name = zone_name
        self.domain_names: list[str] = domain_names
        self._wildcard = wildcard
        self.created_zone = hosted_zone_id is None and zone is None
        self.created_certificate = certificate_arn is None and certificate is None

        self.zone: route53.IHostedZone
        self.name_servers: list[str] | None
        if zone is not None:
            self.zone = zone
            self.name_servers = None
        elif self.created_zone:
            zone = route53.PublicHostedZone(
                self, "HostedZone", zone_name=zone_name,
                comment=f"Custom domain for HyperPod inference endpoints ({zone_name})",
            )
            # ACM leaves its DNS validation CNAMEs in the zone, and Route 53 refuses to delete a non-empty zone.
            zone.apply_removal_policy(RemovalPolicy.RETAIN)
            self.zone = zone
            self.name_servers = zone.hosted_zone_name_servers
        else:
            self.zone = route53.HostedZone.from_hosted_zone_attributes(
                self, "HostedZone", hosted_zone_id=hosted_zone_id, zone_name=zone_name,
            )
            self.name_servers = None
        self.hosted_zone_id: str = self.zone.hosted_zone_id

        self.certificate: acm.ICertificate
        if certificate is not None:
            self.certificate = certificate
        elif self.created_certificate:
            names = certificate_names(zone_name, domain_names, wildcard)
            self.certificate = acm.Certificate(
                self, "Certificate",
                domain_name=names[0],
                subject_alternative_names=names[1:] or None,
                validation=acm.CertificateValidation.from_dns(self.zone),
            )
            # The names are read at synth, so domain names added later (add_domain_name) are on the certificate.
            cfn = self.certificate.node.default_child
            cfn.add_property_override("DomainName", lazy(lambda: self.certificate_names[0]))
            cfn.add_property_override("SubjectAlternativeNames", lazy(lambda: self.certificate_names[1:] or None))
            cfn.add_property_override("DomainValidationOptions", lazy(self._domain_validation_options))
        else:
            self.certificate = acm.Certificate.from_certificate_arn(self, "Certificate", certificate_arn)
        self.certificate_arn: str = self.certificate.certificate_arn

    @property
    def certificate_names(self) -> list[str]:
        """The names an issued certificate carries, its domain name first; [] for an imported certificate."""
        if not self.created_certificate:
            return []
        return certificate_names(self.zone_name, self.domain_names, self._wildcard)

    def add_domain_name(self, name: str) -> None:
        """One more endpoint domain name: on the issued certificate and in the DNS grants (both read at synth)."""
        self._validate(self.zone_name, [*self.domain_names, name], None,
                       None if self.created_certificate else self.certificate.certificate_arn, self._wildcard)
        self.domain_names.append(name)

    def _domain_validation_options(self) -> list[dict[str, Any]]:
        # As aws-cdk-lib renders them for CertificateValidation.from_dns(zone): one per name, a wildcard dropped
        # when its apex is among the names.
        names = self.certificate_names
        unique = [n for n in dict.fromkeys(names) if not n.startswith("*.") or n[2:] not in names]
        return [{"DomainName": n, "HostedZoneId": self.zone.hosted_zone_id} for n in unique]

    @property
    def hosted_zone_arn(self) -> str:
        """``arn:<partition>:route53:::hostedzone/<id>``: a literal for an imported zone in a stack whose region
        is known, else with the partition (and, for a created zone, the ID) resolved at deploy time."""
        stack = Stack.of(self)
        partition = literal_partition(self)
        if not self.created_zone and not is_unresolved(partition):
            return f"arn:{partition}:route53:::hostedzone/{self.hosted_zone_id}"
        return stack.format_arn(service="route53", account="", region="", resource="hostedzone",
                                resource_name=self.hosted_zone_id)

    def grant_certificate_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """``acm:DescribeCertificate`` and ``acm:GetCertificate`` on this certificate only."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["acm:DescribeCertificate", "acm:GetCertificate"],
            resource_arns=[self.certificate_arn],
        )

    def grant_dns_management(self, grantee: iam.IGrantable) -> iam.Grant:
        """What the operator needs to manage the endpoints' records in this zone, and no more.

        Read the zone (``route53:GetHostedZone``, ``route53:ListResourceRecordSets``), and
        ``route53:ChangeResourceRecordSets`` only when every changed record is of type A or TXT and is named exactly
        an endpoint domain name (``StringEquals``; no ``*.<name>``). The operator's TXT ownership record name is not
        documented: if it sits elsewhere, the change is denied and the endpoint's DNS status shows Error.
        Route 53 compares normalized names: lowercase, no trailing dot, which the validated names already are.
        """
        zone_arn = self.hosted_zone_arn
        read = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["route53:GetHostedZone", "route53:ListResourceRecordSets"],
            resource_arns=[zone_arn],
        )
        record_names = lazy(lambda: list(dict.fromkeys(self.domain_names)))
        change = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["route53:ChangeResourceRecordSets"],
            resource_arns=[zone_arn],
            conditions={
                "ForAllValues:StringEquals": {
                    "route53:ChangeResourceRecordSetsNormalizedRecordNames": record_names,
                    "route53:ChangeResourceRecordSetsRecordTypes": list(OPERATOR_RECORD_TYPES),
                },
            },
        )
        return read.combine(change)

    # -- validation ------------------------------------------------------------------------------------------

    def _validate_objects(self, zone_name: str, zone: route53.IHostedZone | None, hosted_zone_id: str | None,
                          certificate: acm.ICertificate | None, certificate_arn: str | None,
                          wildcard: bool | None) -> None:
        problems = []
        if zone is not None and hosted_zone_id is not None:
            problems.append("zone and hosted_zone_id: give one")
        if zone is not None and not is_unresolved(zone.zone_name) and not is_unresolved(zone_name) \
                and zone.zone_name.rstrip(".") != zone_name:
            problems.append(f"zone: its name is {zone.zone_name!r}, not zone_name {zone_name!r}")
        if certificate is not None and certificate_arn is not None:
            problems.append("certificate and certificate_arn: give one")
        if certificate is not None and wildcard is not None:
            problems.append("wildcard: only applies to an issued certificate")
        if problems:
            raise ValueError(f"CustomDomain {self.node.path}: {len(problems)} problem(s):\n  - "
                             + "\n  - ".join(problems))

    def _validate(self, zone_name: str, domain_names: list[str], hosted_zone_id: str | None,
                  certificate_arn: str | None, wildcard: bool | None) -> None:
        problems: list[str] = []
        zone_known = not is_unresolved(zone_name)
        if zone_known:
            problem = rules.domain_name_problem(zone_name)
            if problem:
                problems.append(f"zone_name: {problem} (got {zone_name!r})")

        if not domain_names:
            problems.append("domain_names: at least one domain name is required")
        seen: dict[str, int] = {}
        for i, name in enumerate(domain_names):
            if is_unresolved(name):
                continue
            prop = f"domain_names[{i}]"
            problem = rules.domain_name_problem(name)
            if problem:
                problems.append(f"{prop}: {problem} (got {name!r})")
            if zone_known and not rules.domain_within_zone(name, zone_name):
                problems.append(f"{prop}: must be inside the zone {zone_name!r} (equal to it or ending with "
                                f"'.{zone_name}') (got {name!r})")
            if name in seen:
                problems.append(f"{prop}: duplicate of domain_names[{seen[name]}] ({name!r})")
            else:
                seen[name] = i

        if hosted_zone_id is not None and not is_unresolved(hosted_zone_id):
            problem = rules.hosted_zone_id_problem(hosted_zone_id)
            if problem:
                problems.append(f"hosted_zone_id: {problem} (got {hosted_zone_id!r})")

        if certificate_arn is not None:
            if wildcard is not None:
                problems.append("wildcard: only applies to an issued certificate; leave it unset when "
                                "certificate_arn imports one")
            if not is_unresolved(certificate_arn):
                region = Stack.of(self).region
                problem = rules.acm_certificate_arn_problem(certificate_arn)
                if problem is None and not is_unresolved(region):
                    problem = rules.certificate_region_problem(certificate_arn, region)
                if problem:
                    problems.append(f"certificate_arn: {problem} (got {certificate_arn!r})")
        elif zone_known or wildcard is False:
            problem = rules.issued_certificate_problem(zone_name, domain_names, wildcard)
            if problem:
                problems.append(f"domain_names: {problem}")

        if problems:
            raise ValueError(f"CustomDomain {self.node.path}: {len(problems)} problem(s):\n  - "
                             + "\n  - ".join(problems))
