"""CustomDomain: hosted zone + ACM certificate (created or imported), the operator's grants, and prop validation."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from hyperpod_inference.constructs.domain import CustomDomain, delegation_instructions
from tests.template_lint import cfn_lint_errors

ENV = cdk.Environment(account="111122223333", region="us-west-2")
ZONE = "example.com"
ZONE_ID = "Z0123456789ABCDEFGHIJ"
CERT_ARN = "arn:aws:acm:us-west-2:111122223333:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"


def _stack(env: cdk.Environment | None = ENV, app: cdk.App | None = None) -> cdk.Stack:
    return cdk.Stack(app or cdk.App(), "DomainStack", env=env)


def _operator_role(stack: cdk.Stack) -> iam.Role:
    return iam.Role(stack, "OperatorRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))


def _logical_id(template: Template, resource_type: str) -> str:
    resources = template.find_resources(resource_type)
    assert len(resources) == 1, resources
    return next(iter(resources))


def _statements(template: Template) -> list[dict]:
    policies = template.find_resources("AWS::IAM::Policy")
    return [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]


def _zone_arn_join(zone_logical_id: str) -> dict:
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":route53:::hostedzone/", {"Ref": zone_logical_id}]]}


def _expected_dns_statements(zone_arn, names: list[str]) -> list[dict]:
    return [
        {"Action": ["route53:GetHostedZone", "route53:ListResourceRecordSets"], "Effect": "Allow",
         "Resource": zone_arn},
        {"Action": "route53:ChangeResourceRecordSets", "Effect": "Allow", "Resource": zone_arn,
         "Condition": {
             "ForAllValues:StringEquals": {"route53:ChangeResourceRecordSetsNormalizedRecordNames": names,
                                           "route53:ChangeResourceRecordSetsRecordTypes": ["A", "TXT"]},
         }},
    ]


# -- created zone + issued certificate -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def created():
    """GIVEN a stack with a CustomDomain that creates the zone and issues the certificate for two names,
    and an operator role granted DNS management and certificate read."""
    stack = _stack()
    domain = CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=["chat.example.com", "embed.example.com"])
    role = _operator_role(stack)
    domain.grant_dns_management(role)
    domain.grant_certificate_read(role)
    return stack, domain, Template.from_stack(stack)


def test_created_zone_is_a_public_zone_retained_on_delete(created):
    _, domain, template = created
    template.has_resource("AWS::Route53::HostedZone", {
        "Properties": {"Name": "example.com."},
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
    })
    template.resource_count_is("AWS::Route53::HostedZone", 1)
    assert domain.created_zone is True


def test_issued_certificate_is_dns_validated_in_the_created_zone_for_every_name(created):
    _, domain, template = created
    zone_id = _logical_id(template, "AWS::Route53::HostedZone")
    template.has_resource_properties("AWS::CertificateManager::Certificate", {
        "DomainName": "chat.example.com",
        "SubjectAlternativeNames": ["embed.example.com"],
        "ValidationMethod": "DNS",
        "DomainValidationOptions": [
            {"DomainName": "chat.example.com", "HostedZoneId": {"Ref": zone_id}},
            {"DomainName": "embed.example.com", "HostedZoneId": {"Ref": zone_id}},
        ],
    })
    assert domain.created_certificate is True


def test_created_ids_are_deploy_time_references(created):
    stack, domain, template = created
    zone_id = _logical_id(template, "AWS::Route53::HostedZone")
    cert_id = _logical_id(template, "AWS::CertificateManager::Certificate")
    assert stack.resolve(domain.hosted_zone_id) == {"Ref": zone_id}
    assert stack.resolve(domain.certificate_arn) == {"Ref": cert_id}
    assert stack.resolve(domain.name_servers) == {"Fn::GetAtt": [zone_id, "NameServers"]}


def test_dns_grant_on_a_created_zone_allows_only_a_and_txt_records_named_exactly_the_endpoints(created):
    _, _, template = created
    zone_arn = _zone_arn_join(_logical_id(template, "AWS::Route53::HostedZone"))
    dns = [s for s in _statements(template) if "route53" in json.dumps(s["Action"])]
    assert dns == _expected_dns_statements(zone_arn, ["chat.example.com", "embed.example.com"])


def test_certificate_read_grant_names_exactly_the_issued_certificate(created):
    _, _, template = created
    cert_id = _logical_id(template, "AWS::CertificateManager::Certificate")
    acm = [s for s in _statements(template) if "acm" in json.dumps(s["Action"])]
    assert acm == [{"Action": ["acm:DescribeCertificate", "acm:GetCertificate"], "Effect": "Allow",
                    "Resource": {"Ref": cert_id}}]


def test_created_zone_template_passes_cfn_lint(created, tmp_path):
    _, _, template = created
    path = tmp_path / "domain.template.json"
    path.write_text(json.dumps(template.to_json()))
    assert cfn_lint_errors([path]) == []


def test_created_zone_and_issued_certificate_have_no_cdk_nag_findings(tmp_path):
    # GIVEN an app with the AwsSolutions pack, a created zone, an issued certificate and both grants
    app = cdk.App(outdir=str(tmp_path / "clean"))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = _stack(app=app)
    domain = CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=["chat.example.com", "a.b.example.com"])
    role = _operator_role(stack)
    domain.grant_dns_management(role)
    domain.grant_certificate_read(role)
    # WHEN synthesized THEN validation passes (cdk-nag raises ValidationFailed on any unacknowledged finding)
    assembly = app.synth()
    assert assembly.get_stack_by_name("DomainStack").template["Resources"]


def test_cdk_nag_check_is_live_so_the_clean_result_means_something(tmp_path):
    # GIVEN the same plugin setup with a known finding (wildcard resource)
    app = cdk.App(outdir=str(tmp_path / "dirty"))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = _stack(app=app)
    _operator_role(stack).add_to_policy(iam.PolicyStatement(actions=["route53:GetHostedZone"], resources=["*"]))
    # WHEN synthesized THEN it fails
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()


# -- wildcard ---------------------------------------------------------------------------------------------------

def test_more_than_nine_names_switch_to_wildcard_plus_apex_and_keep_deeper_names():
    # GIVEN 10 endpoint names, one of them two labels under the zone
    names = [f"ep{i}.example.com" for i in range(9)] + ["a.b.example.com"]
    stack = _stack()
    # WHEN the certificate is issued with the automatic wildcard rule
    domain = CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=names)
    # THEN it is *.zone + apex, plus the name the wildcard does not cover
    Template.from_stack(stack).has_resource_properties("AWS::CertificateManager::Certificate", {
        "DomainName": "*.example.com",
        "SubjectAlternativeNames": ["example.com", "a.b.example.com"],
        "ValidationMethod": "DNS",
    })
    assert domain.certificate_names == ["*.example.com", "example.com", "a.b.example.com"]


def test_nine_names_stay_specific_names():
    names = [f"ep{i}.example.com" for i in range(9)]
    stack = _stack()
    domain = CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=names)
    Template.from_stack(stack).has_resource_properties("AWS::CertificateManager::Certificate", {
        "DomainName": "ep0.example.com", "SubjectAlternativeNames": names[1:],
    })
    assert domain.certificate_names == names


def test_wildcard_true_with_one_name_issues_wildcard_plus_apex():
    stack = _stack()
    CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=["chat.example.com"], wildcard=True)
    template = Template.from_stack(stack)
    zone_id = _logical_id(template, "AWS::Route53::HostedZone")
    template.has_resource_properties("AWS::CertificateManager::Certificate", {
        "DomainName": "*.example.com",
        "SubjectAlternativeNames": ["example.com"],
        # *.example.com and example.com share one validation record; CDK lists the apex
        "DomainValidationOptions": [{"DomainName": "example.com", "HostedZoneId": {"Ref": zone_id}}],
    })


def test_wildcard_false_with_ten_names_is_rejected():
    names = [f"ep{i}.example.com" for i in range(10)]
    with pytest.raises(ValueError, match=r"domain_names: 10 names with wildcard false"):
        CustomDomain(_stack(), "Domain", zone_name=ZONE, domain_names=names, wildcard=False)


def test_wildcard_certificate_over_ten_names_because_of_deeper_names_is_rejected():
    # GIVEN 9 names two labels deep: *.zone + apex + 9 = 11 names
    names = [f"ep{i}.deep.example.com" for i in range(9)]
    with pytest.raises(ValueError, match=r"domain_names: the certificate would need 11 names"):
        CustomDomain(_stack(), "Domain", zone_name=ZONE, domain_names=names, wildcard=True)


# -- imports ----------------------------------------------------------------------------------------------------

def test_imported_zone_and_certificate_create_nothing_and_grants_name_the_literal_ids():
    # GIVEN a fresh stack importing both the zone and the certificate
    stack = _stack()
    domain = CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=["chat.example.com"],
                          hosted_zone_id=ZONE_ID, certificate_arn=CERT_ARN)
    role = _operator_role(stack)
    # WHEN the operator role is granted both
    domain.grant_dns_management(role)
    domain.grant_certificate_read(role)
    template = Template.from_stack(stack)
    # THEN there is no zone and no certificate, and the statements carry the literal zone ARN and certificate ARN
    template.resource_count_is("AWS::Route53::HostedZone", 0)
    template.resource_count_is("AWS::CertificateManager::Certificate", 0)
    zone_arn = f"arn:aws:route53:::hostedzone/{ZONE_ID}"
    assert _statements(template) == _expected_dns_statements(zone_arn, ["chat.example.com"]) + [
        {"Action": ["acm:DescribeCertificate", "acm:GetCertificate"], "Effect": "Allow", "Resource": CERT_ARN},
    ]
    assert (domain.created_zone, domain.created_certificate, domain.name_servers) == (False, False, None)
    assert (domain.hosted_zone_id, domain.certificate_arn) == (ZONE_ID, CERT_ARN)


def test_imported_zone_in_an_environment_agnostic_stack_resolves_the_partition_at_deploy():
    stack = _stack(env=None)
    domain = CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=["chat.example.com"],
                          hosted_zone_id=ZONE_ID)
    assert stack.resolve(domain.hosted_zone_arn) == {
        "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":route53:::hostedzone/{ZONE_ID}"]]}


def test_issued_certificate_validates_in_an_imported_zone():
    stack = _stack()
    CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=["chat.example.com"], hosted_zone_id=ZONE_ID)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::Route53::HostedZone", 0)
    template.has_resource_properties("AWS::CertificateManager::Certificate", {
        "DomainName": "chat.example.com",
        "SubjectAlternativeNames": Match.absent(),
        "DomainValidationOptions": [{"DomainName": "chat.example.com", "HostedZoneId": ZONE_ID}],
    })


# -- validation -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("props, expected", [
    ({"zone_name": "Example.com"}, "zone_name: must be lowercase"),
    ({"zone_name": "example.com."}, "zone_name: must be a DNS name"),
    ({"zone_name": "exa_mple.com", "domain_names": ["a.exa_mple.com"]}, "zone_name: must be a DNS name"),
    ({"domain_names": ["chat.example.com", "Chat2.example.com"]}, "domain_names[1]: must be lowercase"),
    ({"domain_names": ["chat.example.com", "*.example.com"]},
     "domain_names[1]: must be a specific name, not a wildcard"),
    ({"domain_names": ["chat.example.com", "-bad.example.com"]}, "domain_names[1]: must be a DNS name"),
    ({"domain_names": ["chat.example.com", "x" * 64 + ".example.com"]}, "domain_names[1]: must be a DNS name"),
    ({"domain_names": ["chat.example.com", ("a" * 60 + ".") * 4 + "example.com"]},
     "domain_names[1]: must be at most 253 characters"),
    ({"domain_names": ["chat.example.com", "chat.example.org"]}, "domain_names[1]: must be inside the zone"),
    ({"domain_names": ["chat.example.com", "notexample.com"]}, "domain_names[1]: must be inside the zone"),
    ({"domain_names": ["chat.example.com", "chat.example.com"]}, "domain_names[1]: duplicate of domain_names[0]"),
    ({"domain_names": []}, "domain_names: at least one domain name is required"),
    ({"hosted_zone_id": "z0123abc"}, "hosted_zone_id: must match"),
    ({"hosted_zone_id": "/hostedzone/Z0123ABC"}, "hosted_zone_id: must match"),
    ({"certificate_arn": "arn:aws:acm:us-west-2:111122223333:certificate/not_hex!"}, "certificate_arn: must match"),
    ({"certificate_arn": "arn:aws-cn:acm:cn-north-1:111122223333:certificate/0a1b2c"}, "certificate_arn: must match"),
    ({"certificate_arn": "arn:aws:acm:us-east-1:111122223333:certificate/0a1b2c"},
     "certificate_arn: must be in the stack's region 'us-west-2'"),
    ({"certificate_arn": CERT_ARN, "wildcard": True}, "wildcard: only applies to an issued certificate"),
])
def test_invalid_props_are_rejected_naming_the_prop_and_rule(props, expected):
    kwargs = {"zone_name": ZONE, "domain_names": ["chat.example.com"], **props}
    with pytest.raises(ValueError) as err:
        CustomDomain(_stack(), "Domain", **kwargs)
    assert expected in str(err.value)


def test_every_problem_is_reported_in_one_error():
    with pytest.raises(ValueError) as err:
        CustomDomain(_stack(), "Domain", zone_name=ZONE,
                     domain_names=["chat.example.org", "UP.example.com", "chat.example.org"],
                     hosted_zone_id="bad", certificate_arn="arn:aws:acm:eu-west-1:111122223333:certificate/ab")
    message = str(err.value)
    for expected in ("domain_names[0]: must be inside the zone", "domain_names[1]: must be lowercase",
                     "domain_names[2]: must be inside the zone", "domain_names[2]: duplicate of domain_names[0]",
                     "hosted_zone_id: must match",
                     "certificate_arn: must be in the stack's region"):
        assert expected in message
    assert "6 problem(s)" in message


def test_certificate_region_is_not_checked_when_the_stack_region_is_unknown():
    stack = _stack(env=None)
    arn = "arn:aws:acm:eu-west-1:111122223333:certificate/0a1b2c"
    domain = CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=["chat.example.com"],
                          hosted_zone_id=ZONE_ID, certificate_arn=arn)
    assert domain.certificate_arn == arn


def test_unresolved_tokens_are_not_validated():
    # GIVEN deploy-time values for the zone ID, the certificate ARN and one domain name
    stack = _stack()
    zone_id = cdk.CfnParameter(stack, "ZoneId").value_as_string
    cert_arn = cdk.CfnParameter(stack, "CertArn").value_as_string
    name = cdk.CfnParameter(stack, "Name").value_as_string
    # WHEN the construct is built THEN it accepts them and passes them through
    domain = CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=["chat.example.com", name],
                          hosted_zone_id=zone_id, certificate_arn=cert_arn)
    assert stack.resolve(domain.hosted_zone_id) == {"Ref": "ZoneId"}
    assert stack.resolve(domain.certificate_arn) == {"Ref": "CertArn"}


def test_delegation_instructions_tell_the_user_to_add_ns_records_in_the_parent_zone():
    text = delegation_instructions("example.com")
    assert "example.com" in text
    assert "NS record" in text
    assert "parent zone" in text
    assert "ACM" in text


def test_an_apex_endpoint_name_grants_only_the_apex_records_never_the_whole_zone():
    # GIVEN an endpoint whose domain name is the zone apex
    stack = _stack()
    domain = CustomDomain(stack, "Domain", zone_name=ZONE, domain_names=[ZONE])
    role = _operator_role(stack)
    # WHEN the operator role gets DNS management
    domain.grant_dns_management(role)
    change = next(s for s in _statements(Template.from_stack(stack)) if s["Action"] == "route53:ChangeResourceRecordSets")
    # THEN the record-name condition is exactly the apex, compared literally: no *.example.com reaching every record
    assert change["Condition"] == {"ForAllValues:StringEquals": {
        "route53:ChangeResourceRecordSetsNormalizedRecordNames": [ZONE],
        "route53:ChangeResourceRecordSetsRecordTypes": ["A", "TXT"]}}
    assert "*" not in json.dumps(change)
