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

import re
from collections.abc import Sequence

from aws_cdk import RemovalPolicy, Stack, Token, region_info
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_iam as iam
from aws_cdk import aws_route53 as route53
from constructs import Construct

from ..config import rules

# customCertificateConfig.domainName (CRD): a lowercase DNS name, at most 253 characters, labels of 1-63.
_DNS_NAME = re.compile(rules.DNS1123_SUBDOMAIN)
_DNS_NAME_MAX = 253
_DNS_LABEL_MAX = 63
_HOSTED_ZONE_ID = re.compile(rules.HOSTED_ZONE_ID)  # dnsConfig.hostedZoneId (CRD)
_ACM_ARN = re.compile(rules.ACM_ARN_CRD)  # customCertificateConfig.acmArn (CRD)

#: ACM's default quota: domain names per certificate (the domain name plus its subject alternative names).
ACM_MAX_NAMES_PER_CERTIFICATE = 10
#: With ``wildcard=None``, more endpoint names than this switch the issued certificate to ``*.<zone>`` + apex.
AUTO_WILDCARD_ABOVE = 9

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


def _is_token(value: object) -> bool:
    return isinstance(value, str) and Token.is_unresolved(value)


def _dns_name_problems(value: str) -> list[str]:
    problems = []
    if value != value.lower():
        problems.append("must be lowercase")
    if len(value) > _DNS_NAME_MAX:
        problems.append(f"must be at most {_DNS_NAME_MAX} characters (is {len(value)})")
    if value.startswith("*"):
        problems.append("must be a specific name, not a wildcard")
    elif not _DNS_NAME.match(value.lower()) or any(len(label) > _DNS_LABEL_MAX for label in value.split(".")):
        problems.append(
            f"must be a DNS name: labels of 1-{_DNS_LABEL_MAX} letters, digits or hyphens (not at either end), "
            "separated by dots, no trailing dot"
        )
    return problems


def _in_zone(name: str, zone_name: str) -> bool:
    return name == zone_name or name.endswith("." + zone_name)


def _covered_by_wildcard(name: str, zone_name: str) -> bool:
    """True when ``*.<zone>`` or the apex ``<zone>`` covers ``name`` (a wildcard covers exactly one label)."""
    if _is_token(name) or _is_token(zone_name):
        return False
    if name == zone_name:
        return True
    suffix = "." + zone_name
    return name.endswith(suffix) and "." not in name[: -len(suffix)]


def certificate_names(zone_name: str, domain_names: Sequence[str], wildcard: bool | None) -> list[str]:
    """The names an issued certificate carries, the certificate's domain name first.

    Specific names: the endpoint names as given. Wildcard (``wildcard=True``, or ``None`` with more than
    :data:`AUTO_WILDCARD_ABOVE` names): ``*.<zone>``, the apex ``<zone>``, then every endpoint name the wildcard
    does not cover (deeper than one label under the zone).
    """
    use_wildcard = wildcard if wildcard is not None else len(domain_names) > AUTO_WILDCARD_ABOVE
    if not use_wildcard:
        return list(domain_names)
    names = [f"*.{zone_name}", zone_name]
    for name in domain_names:
        if not _covered_by_wildcard(name, zone_name) and name not in names:
            names.append(name)
    return names


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
                 wildcard: bool | None = None) -> None:
        super().__init__(scope, construct_id)
        domain_names = list(domain_names)
        self._validate(zone_name, domain_names, hosted_zone_id, certificate_arn, wildcard)

        self.zone_name = zone_name
        self.domain_names: list[str] = domain_names
        self.created_zone = hosted_zone_id is None
        self.created_certificate = certificate_arn is None

        self.zone: route53.IHostedZone
        self.name_servers: list[str] | None
        if self.created_zone:
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
        if self.created_certificate:
            names = certificate_names(zone_name, domain_names, wildcard)
            self.certificate = acm.Certificate(
                self, "Certificate",
                domain_name=names[0],
                subject_alternative_names=names[1:] or None,
                validation=acm.CertificateValidation.from_dns(self.zone),
            )
            self.certificate_names: list[str] = names
        else:
            self.certificate = acm.Certificate.from_certificate_arn(self, "Certificate", certificate_arn)
            self.certificate_names = []
        self.certificate_arn: str = self.certificate.certificate_arn

    @property
    def hosted_zone_arn(self) -> str:
        """``arn:<partition>:route53:::hostedzone/<id>``: a literal for an imported zone in a stack whose region
        is known, else with the partition (and, for a created zone, the ID) resolved at deploy time."""
        stack = Stack.of(self)
        if not self.created_zone and not Token.is_unresolved(stack.region):
            partition = region_info.RegionInfo.get(stack.region).partition
            if partition:
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
        record_names = list(dict.fromkeys(self.domain_names))
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

    def _validate(self, zone_name: str, domain_names: list[str], hosted_zone_id: str | None,
                  certificate_arn: str | None, wildcard: bool | None) -> None:
        problems: list[str] = []
        zone_known = not _is_token(zone_name)
        if zone_known:
            problems += [f"zone_name: {p} (got {zone_name!r})" for p in _dns_name_problems(zone_name)]

        if not domain_names:
            problems.append("domain_names: at least one domain name is required")
        seen: dict[str, int] = {}
        for i, name in enumerate(domain_names):
            if _is_token(name):
                continue
            prop = f"domain_names[{i}]"
            problems += [f"{prop}: {p} (got {name!r})" for p in _dns_name_problems(name)]
            if zone_known and not _in_zone(name, zone_name):
                problems.append(f"{prop}: must be inside the zone {zone_name!r} (equal to it or ending with "
                                f"'.{zone_name}') (got {name!r})")
            if name in seen:
                problems.append(f"{prop}: duplicate of domain_names[{seen[name]}] ({name!r})")
            else:
                seen[name] = i

        if hosted_zone_id is not None and not _is_token(hosted_zone_id) and not _HOSTED_ZONE_ID.match(hosted_zone_id):
            problems.append(f"hosted_zone_id: must match {_HOSTED_ZONE_ID.pattern} (got {hosted_zone_id!r})")

        if certificate_arn is not None:
            if wildcard is not None:
                problems.append("wildcard: only applies to an issued certificate; leave it unset when "
                                "certificate_arn imports one")
            if not _is_token(certificate_arn):
                match = _ACM_ARN.match(certificate_arn)
                region = Stack.of(self).region
                if not match:
                    problems.append(f"certificate_arn: must match the operator's pattern {_ACM_ARN.pattern} "
                                    f"(got {certificate_arn!r})")
                elif not Token.is_unresolved(region) and certificate_arn.split(":")[3] != region:
                    problems.append(f"certificate_arn: must be in the stack's region {region!r}, the operator "
                                    f"requires it (got region {certificate_arn.split(':')[3]!r})")
        else:
            if wildcard is False and len(domain_names) > AUTO_WILDCARD_ABOVE:
                problems.append(f"domain_names: {len(domain_names)} names with wildcard=False; at most "
                                f"{AUTO_WILDCARD_ABOVE} specific names per issued certificate (leave wildcard "
                                f"unset or True, or import a certificate)")
            elif zone_known and domain_names:
                total = len(certificate_names(zone_name, domain_names, wildcard))
                if total > ACM_MAX_NAMES_PER_CERTIFICATE:
                    problems.append(f"domain_names: the certificate would need {total} names, more than ACM's "
                                    f"default quota of {ACM_MAX_NAMES_PER_CERTIFICATE} per certificate (names "
                                    f"deeper than one label under the zone are not covered by '*.{zone_name}')")

        if problems:
            raise ValueError(f"CustomDomain {self.node.path}: {len(problems)} problem(s):\n  - "
                             + "\n  - ".join(problems))
