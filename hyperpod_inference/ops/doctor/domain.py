"""The ``domain`` family of ``doctor``: the custom domain. The hosted zone ``domain.hostedZoneId`` names is
``domain.zoneName`` and holds every endpoint's ``domainName`` (or the stack creates a zone no other public zone of that
name shadows), and an imported certificate is issued and covers every endpoint name.
"""

from __future__ import annotations

from collections.abc import Iterator

from .base import FAIL, PASS, WARN, Context, Family, Result

FAMILY = Family("domain", "the hosted zone and the certificate of the custom domain")


@FAMILY.check("domain.hosted-zone", "domain.hostedZoneId exists and is domain.zoneName", lambda c: "domain")
def check_zone(ctx: Context) -> Iterator[Result]:
    domain = ctx.config.domain
    if domain is None:
        return
    zone = domain.zone_name.rstrip(".")
    if not domain.hosted_zone_id:
        listed = ctx.aws.call("route53", "ListHostedZonesByName", DNSName=zone, MaxItems="1") or {}
        same = [z for z in listed.get("HostedZones") or [] if z.get("Name", "").rstrip(".") == zone
                and not (z.get("Config") or {}).get("PrivateZone")]
        if same:
            yield Result("domain.hosted-zone", WARN, f"hosted zone {zone}",
                         f"a public zone {zone} exists already ({same[0]['Id']}); the stack would create a second one",
                         f"set domain.hostedZoneId: {same[0]['Id'].rsplit('/', 1)[-1]}")
        else:
            yield Result("domain.hosted-zone", PASS, f"hosted zone {zone}", "the stack creates it (delegate it)")
        return
    resource = f"hosted zone {domain.hosted_zone_id}"
    found = ctx.aws.call("route53", "GetHostedZone", Id=domain.hosted_zone_id, missing=("NoSuchHostedZone",))
    if found is None:
        yield Result("domain.hosted-zone", FAIL, resource, "no such hosted zone", "set domain.hostedZoneId")
        return
    name = found["HostedZone"]["Name"].rstrip(".")
    if name != zone:
        yield Result("domain.hosted-zone", FAIL, resource, f"the zone is {name}, not domain.zoneName {zone}",
                     "set domain.hostedZoneId or domain.zoneName")
    else:
        outside = [ep.domain_name for ep in ctx.config.endpoints if ep.domain_name
                   and not (ep.domain_name == zone or ep.domain_name.endswith("." + zone))]
        if outside:
            yield Result("domain.hosted-zone", FAIL, resource, f"{', '.join(outside)} are not in {zone}",
                         "set the endpoints' domainName inside the zone")
        else:
            yield Result("domain.hosted-zone", PASS, resource, f"{name}")


def covers(pattern: str, name: str) -> bool:
    """Whether a certificate name (``*.example.com`` covers exactly one label) covers ``name``."""
    pattern, name = pattern.lower().rstrip("."), name.lower().rstrip(".")
    if pattern.startswith("*."):
        head, _, rest = name.partition(".")
        return bool(head) and rest == pattern[2:]
    return pattern == name


@FAMILY.check("domain.certificate", "an imported certificate is ISSUED and covers every endpoint name",
              lambda c: "domain")
def check_certificate(ctx: Context) -> Iterator[Result]:
    domain = ctx.config.domain
    if domain is None or not domain.certificate_arn:
        return
    arn = domain.certificate_arn
    found = ctx.aws.call("acm", "DescribeCertificate", CertificateArn=arn, missing=("ResourceNotFoundException",))
    if found is None:
        yield Result("domain.certificate", FAIL, arn, "no such certificate", "set domain.certificateArn, or null")
        return
    cert = found["Certificate"]
    names = [cert.get("DomainName", ""), *(cert.get("SubjectAlternativeNames") or [])]
    wanted = [ep.domain_name for ep in ctx.config.endpoints if ep.domain_name]
    uncovered = [n for n in wanted if not any(covers(p, n) for p in names)]
    if cert.get("Status") != "ISSUED":
        yield Result("domain.certificate", FAIL, arn, f"status {cert.get('Status')}, not ISSUED",
                     f"aws acm describe-certificate --certificate-arn {arn} (complete its validation)")
    elif uncovered:
        yield Result("domain.certificate", FAIL, arn, f"does not cover {', '.join(uncovered)} (it has "
                     f"{', '.join(names)})", "issue a certificate for those names, or set domain.certificateArn: null")
    else:
        yield Result("domain.certificate", PASS, arn, f"ISSUED for {', '.join(names)}")
