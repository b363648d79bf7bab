"""One home for every pattern, limit and rule function that checks a value (CRD rules from the operator, AWS
identifier shapes, Kubernetes naming). The config models and the constructs' prop checks both call these, so the two
can never disagree.

Rule functions return ``None`` for a good value and a short reason otherwise (``"must not contain '..'"``), so each
caller adds its own location: a YAML path in the config, a prop name in a construct. Standard library only."""

from __future__ import annotations

import re

# --- Kubernetes naming --------------------------------------------------------------------------------------------
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # ≤ 63
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"  # ≤ 253
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"  # ConfigMap/Secret data keys, ≤ 253

# --- Operator CRD (inference.sagemaker.aws.amazon.com/v1) --------------------------------------------------------
ENDPOINT_NAME = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"  # spec.endpointName (SageMaker endpoint name)
INSTANCE_TYPE = r"^ml\.[a-z0-9-]+\.[a-z0-9]+$"  # CRD: ^ml\..* ; shape of a real SageMaker instance type
HF_MODEL_ID = r"^[a-zA-Z0-9_.-]+/[a-zA-Z0-9_.-]+$"  # huggingFaceModel.modelId
HF_COMMIT_SHA = r"^[0-9a-f]{40}$"  # huggingFaceModel.commitSHA
CONTENT_TYPE = r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*/[a-zA-Z0-9](-*[a-zA-Z0-9.])*$"  # captureContentTypeHeader items, 1–256
ACM_ARN_CRD = r"^arn:aws:acm:[a-z0-9-]+:[0-9]{12}:certificate/[a-fA-F0-9-]+$"  # customCertificateConfig.acmArn
HOSTED_ZONE_ID = r"^Z[A-Z0-9]+$"  # dnsConfig.hostedZoneId
DOMAIN_NAME = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"  # customCertificateConfig.domainName, ≤ 253
RESERVED_VOLUME_NAMES = frozenset(
    {"shm", "model-weights-copy", "parallel-copy-configmap", "lmcache-config", "gated-model-downloader-configmap"}
)
SAMPLING_RANGE = (0, 100)
BATCH_SIZE_RANGE = (1, 1000)  # modelPod.bufferConfig.batchSize (default 10)
FLUSH_INTERVAL_RANGE = (10, 300)  # modelPod.bufferConfig.flushIntervalSeconds (default 60)
MAX_PAYLOAD_KB_RANGE = (0, 10240)  # modelPod.payloadConfig.maxPayloadSizeKB (default 0 = no limit)
CONTENT_TYPES_MAX = 10
HOST_PATH_MAX = 255  # modelCacheConfig.weightsCache.hostPath

# --- AWS identifiers ----------------------------------------------------------------------------------------------
ACCOUNT = r"^[0-9]{12}$"
REGION = r"^[a-z]{2}(-[a-z]+)+-[0-9]$"
EKS_CLUSTER_NAME = r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$"
PARTITION = r"aws(?:-[a-z]+)*"  # aws, aws-cn, aws-us-gov, aws-iso-b, ...
HYPERPOD_CLUSTER_ARN = rf"^arn:{PARTITION}:sagemaker:([a-z0-9-]+):([0-9]{{12}}):cluster/[a-z0-9]{{12}}$"
IAM_ROLE_ARN = rf"^arn:{PARTITION}:iam::([0-9]{{12}}):role/[A-Za-z0-9_+=,.@/-]{{1,512}}$"
IAM_ROLE_NAME = r"^[A-Za-z0-9_+=,.@-]{1,64}$"
OIDC_PROVIDER_ARN = (rf"^arn:{PARTITION}:iam::([0-9]{{12}}):oidc-provider/oidc\.eks\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?"
                     r"/id/[A-Za-z0-9]+$")
VPC_ID = r"^vpc-[0-9a-f]{8,17}$"
SUBNET_ID = r"^subnet-[0-9a-f]{8,17}$"
SECURITY_GROUP_ID = r"^sg-[0-9a-f]{8,17}$"
S3_BUCKET_NAME = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"  # the shape; bucket_name_problem() adds S3's other rules
S3_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
S3_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
S3_PREFIX = r"^[A-Za-z0-9!_.*'()/-]*$"
# capture.prefix: a literal folder (the grants end in <prefix>/*): no '*' or '?', no empty segment, no leading or
# trailing '/'
CAPTURE_PREFIX = r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$"
CAPTURE_PREFIX_MAX = 256
KMS_KEY_ARN = (rf"^arn:{PARTITION}:kms:([a-z0-9-]+):([0-9]{{12}}):key/"
               r"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$")
SECRETS_MANAGER_ARN = rf"^arn:{PARTITION}:secretsmanager:([a-z0-9-]+):([0-9]{{12}}):secret:[A-Za-z0-9/_+=.@-]+$"
EKS_ADDON_VERSION = r"^v\d+\.\d+\.\d+-eksbuild\.\d+$"
FSX_ID = r"^fs-[0-9a-f]{8,17}$"
ABSOLUTE_PATH = r"^/[^\0]*$"
JUMPSTART_MODEL_ID = r"^[a-zA-Z0-9][a-zA-Z0-9._-]*$"

CLUSTER_ARN_RE = re.compile(HYPERPOD_CLUSTER_ARN)
IAM_ROLE_ARN_RE = re.compile(IAM_ROLE_ARN)
OIDC_RE = re.compile(OIDC_PROVIDER_ARN)
SECRETS_ARN_RE = re.compile(SECRETS_MANAGER_ARN)

# Names the stack never creates as "owned" namespaces: system namespaces that exist on every cluster.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease", "hyperpod-inference-system"})


# Readable names for patterns in error messages ("must be <description>").
PATTERN_DESCRIPTIONS = {
    DNS1123_LABEL: "a Kubernetes DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric)",
    DNS1123_SUBDOMAIN: "a lowercase DNS name (DNS-1123 subdomain)",
    ENDPOINT_NAME: "a SageMaker endpoint name (letters, digits and '-', at most 63, starting alphanumeric)",
    INSTANCE_TYPE: "a SageMaker instance type such as ml.g5.8xlarge",
    HF_MODEL_ID: "a Hugging Face model ID of the form org/model",
    HF_COMMIT_SHA: "a full 40-character lowercase hex commit SHA",
    CONTENT_TYPE: "a content type such as application/json",
    ACM_ARN_CRD: "an ACM certificate ARN (arn:aws:acm:<region>:<account>:certificate/<id>)",
    DOMAIN_NAME: "a lowercase DNS name (labels of at most 63 letters, digits and '-')",
    HOSTED_ZONE_ID: "a Route 53 hosted zone ID (Z followed by uppercase letters and digits)",
    ACCOUNT: "a 12-digit AWS account ID",
    REGION: "an AWS region such as us-west-2",
    EKS_CLUSTER_NAME: "an EKS cluster name",
    HYPERPOD_CLUSTER_ARN: "a HyperPod cluster ARN (arn:aws:sagemaker:<region>:<account>:cluster/<12 characters>)",
    IAM_ROLE_ARN: "an IAM role ARN (arn:aws:iam::<account>:role/<name>)",
    IAM_ROLE_NAME: "an IAM role name (1-64 letters, digits and +=,.@_-)",
    EKS_ADDON_VERSION: "an EKS add-on version (vX.Y.Z-eksbuild.N)",
    OIDC_PROVIDER_ARN: "an EKS IAM OIDC provider ARN (arn:aws:iam::<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<id>)",
    VPC_ID: "a VPC ID (vpc-...)",
    SUBNET_ID: "a subnet ID (subnet-...)",
    SECURITY_GROUP_ID: "a security group ID (sg-...)",
    S3_BUCKET_NAME: "an S3 bucket name (3-63 lowercase letters, digits, '.', '-')",
    S3_PREFIX: "an S3 key prefix",
    CAPTURE_PREFIX: ("non-empty segments of letters, digits, '.', '_' and '-' separated by single '/', with no leading "
                     "or trailing '/'"),
    KMS_KEY_ARN: "a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>)",
    SECRETS_MANAGER_ARN: "a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>)",
    FSX_ID: "an FSx file system ID (fs-...)",
    ABSOLUTE_PATH: "an absolute path",
    JUMPSTART_MODEL_ID: "a JumpStart model ID",
    SECRET_KEY: "a Secret data key (letters, digits, '-', '_', '.')",
}


# --- rule functions: None = good, else the reason (the caller adds where) -------------------------------------------

def _describe(pattern: str) -> str:
    return f"must be {PATTERN_DESCRIPTIONS[pattern]}"


def pattern_problem(pattern: str, value: str) -> str | None:
    """The one check of ``value`` against one of the patterns above, with the pattern's readable description."""
    return None if isinstance(value, str) and re.match(pattern, value) else _describe(pattern)


def domain_within_zone(domain: str, zone: str) -> bool:
    zone = zone.rstrip(".").lower()
    return domain == zone or domain.endswith("." + zone)


_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def bucket_name_problem(name: str) -> str | None:
    """S3's general purpose bucket naming rules: 3-63 characters of lowercase letters, digits, '.' and '-', starting
    and ending with a letter or digit; no '..'; not an IP address; none of S3's reserved prefixes or suffixes."""
    if not isinstance(name, str) or not re.match(S3_BUCKET_NAME, name):
        return ("must be an S3 bucket name: 3-63 characters of lowercase letters, digits, '.' and '-', starting and "
                "ending with a letter or digit")
    if ".." in name:
        return "must not contain '..' (S3 bucket naming rules)"
    if _IPV4.match(name):
        return "must not be formatted as an IP address (S3 bucket naming rules)"
    for prefix in S3_RESERVED_PREFIXES:
        if name.startswith(prefix):
            return f"must not start with {prefix!r}: S3 reserves that prefix"
    for suffix in S3_RESERVED_SUFFIXES:
        if name.endswith(suffix):
            return f"must not end with {suffix!r}: S3 reserves that suffix"
    return None


def capture_prefix_problem(prefix: str) -> str | None:
    """``capture.prefix``: the folder every capture tier writes under."""
    if isinstance(prefix, str) and len(prefix) > CAPTURE_PREFIX_MAX:
        return f"must be at most {CAPTURE_PREFIX_MAX} characters"
    return pattern_problem(CAPTURE_PREFIX, prefix)


def account_problem(account: str) -> str | None:
    return pattern_problem(ACCOUNT, account)


def dns_label_problem(name: str) -> str | None:
    """A Kubernetes DNS-1123 label (namespace, most object names): at most 63 characters."""
    if isinstance(name, str) and len(name) > 63:
        return "must be at most 63 characters (Kubernetes DNS-1123 label)"
    return pattern_problem(DNS1123_LABEL, name)


def domain_name_problem(name: str) -> str | None:
    """``customCertificateConfig.domainName`` / a hosted zone name: a specific lowercase DNS name of at most 253
    characters, labels of 1-63 letters, digits or '-' (not at either end), no trailing dot."""
    if not isinstance(name, str):
        return _describe(DOMAIN_NAME)
    if name != name.lower():
        return "must be lowercase"
    if len(name) > 253:
        return f"must be at most 253 characters (is {len(name)})"
    if "*" in name:
        return "must be a specific name, not a wildcard"
    if not re.match(DOMAIN_NAME, name):
        return ("must be a DNS name: labels of 1-63 letters, digits or hyphens (not at either end), separated by dots, "
                "no trailing dot")
    return None


def hosted_zone_id_problem(zone_id: str) -> str | None:
    """``dnsConfig.hostedZoneId`` (the operator's pattern)."""
    if isinstance(zone_id, str) and re.match(HOSTED_ZONE_ID, zone_id):
        return None
    return f"must match {HOSTED_ZONE_ID} ({PATTERN_DESCRIPTIONS[HOSTED_ZONE_ID]})"


def acm_certificate_arn_problem(arn: str) -> str | None:
    """The operator's ``customCertificateConfig.acmArn`` pattern."""
    if isinstance(arn, str) and re.match(ACM_ARN_CRD, arn):
        return None
    return f"must match the operator's pattern {ACM_ARN_CRD} ({PATTERN_DESCRIPTIONS[ACM_ARN_CRD]})"


def endpoint_name_problem(name: str) -> str | None:
    """``spec.endpointName``: a SageMaker endpoint name (at most 63 characters)."""
    if isinstance(name, str) and len(name) > 63:
        return "must be at most 63 characters (SageMaker endpoint name)"
    return pattern_problem(ENDPOINT_NAME, name)


def eks_cluster_name_problem(name: str) -> str | None:
    return pattern_problem(EKS_CLUSTER_NAME, name)


def addon_version_problem(version: str) -> str | None:
    return pattern_problem(EKS_ADDON_VERSION, version)


def role_arn_problem(arn: str) -> str | None:
    return pattern_problem(IAM_ROLE_ARN, arn)


def role_name_problem(name: str) -> str | None:
    return pattern_problem(IAM_ROLE_NAME, name)


def role_name_from_arn(arn: str) -> str:
    """``arn:aws:iam::111122223333:role/path/Name`` -> ``Name`` (the path is not part of the name)."""
    return arn.rsplit("/", 1)[-1]


def execution_role_name_problem(name: str, prefix: str) -> str | None:
    """The operator's execution role: an IAM role name starting with ``prefix`` (the add-on refuses other names and
    the managed policy only passes roles with that prefix)."""
    if isinstance(name, str) and not name.startswith(prefix):
        return (f"the role name must start with {prefix} (the add-on refuses other names and the managed policy only "
                "passes roles with that prefix)")
    return role_name_problem(name)


def hyperpod_cluster_arn_problem(arn: str) -> str | None:
    return pattern_problem(HYPERPOD_CLUSTER_ARN, arn)


def oidc_provider_arn_problem(arn: str) -> str | None:
    return pattern_problem(OIDC_PROVIDER_ARN, arn)


def oidc_issuer(arn: str) -> str:
    """``arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/X`` ->
    ``oidc.eks.us-west-2.amazonaws.com/id/X``; ValueError for anything that is not an EKS OIDC provider ARN."""
    problem = oidc_provider_arn_problem(arn)
    if problem:
        raise ValueError(f"oidcProviderArn: {problem} (got {arn!r})")
    return arn.split(":oidc-provider/", 1)[1]


def kms_key_arn_problem(arn: str) -> str | None:
    """A KMS key ARN (a key ID or a multi-Region ``mrk-`` key; not an alias)."""
    return pattern_problem(KMS_KEY_ARN, arn)


def arn_parts(arn: str) -> tuple[str, str, str, str]:
    """``arn:<partition>:<service>:<region>:<account>:...`` -> (partition, service, region, account)."""
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn":
        raise ValueError(f"not an ARN: {arn!r}")
    return parts[1], parts[2], parts[3], parts[4]


# Region prefixes of the partitions other than ``aws`` (the same answer as aws-cdk-lib's region_info, checked by a test).
_PARTITION_BY_REGION_PREFIX = (("cn-", "aws-cn"), ("us-gov-", "aws-us-gov"), ("us-isob-", "aws-iso-b"),
                               ("us-isof-", "aws-iso-f"), ("eu-isoe-", "aws-iso-e"), ("us-iso-", "aws-iso"),
                               ("eusc-", "aws-eusc"))


def partition_of_region(region: str) -> str:
    """``us-west-2`` -> ``aws``, ``cn-north-1`` -> ``aws-cn``, ``us-gov-west-1`` -> ``aws-us-gov``: the one home of
    the partition for the config and ``ops`` (botocore's partition data agrees for every region it knows, and
    aws-cdk-lib's region_info for every region it has; both checked by tests)."""
    for prefix, partition in _PARTITION_BY_REGION_PREFIX:
        if region.startswith(prefix):
            return partition
    return "aws"


def account_root_arn(region: str, account: str) -> str:
    """``arn:<partition>:iam::<account>:root``: the account as a principal, in ``region``'s partition."""
    return f"arn:{partition_of_region(region)}:iam::{account}:root"


def eks_cluster_admin_policy_arn(region: str) -> str:
    """The EKS access policy that makes a principal cluster admin, in ``region``'s partition."""
    return f"arn:{partition_of_region(region)}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


_DOMAIN_SUFFIX_BY_PARTITION = {"aws": "amazonaws.com", "aws-cn": "amazonaws.com.cn", "aws-us-gov": "amazonaws.com",
                               "aws-iso": "c2s.ic.gov", "aws-iso-b": "sc2s.sgov.gov", "aws-iso-e": "cloud.adc-e.uk",
                               "aws-iso-f": "csp.hci.ic.gov", "aws-eusc": "amazonaws.eu"}


def domain_suffix(region: str) -> str:
    """The DNS suffix of AWS service endpoints in ``region`` (``amazonaws.com``, ``amazonaws.com.cn``, ...)."""
    return _DOMAIN_SUFFIX_BY_PARTITION[partition_of_region(region)]


# --- custom domains: what one ACM certificate can carry ---------------------------------------------------------------

#: ACM's default quota: domain names per certificate (the domain name plus its subject alternative names).
ACM_MAX_NAMES_PER_CERTIFICATE = 10
#: With ``wildcard`` unset, more endpoint names than this switch the issued certificate to ``*.<zone>`` + apex.
AUTO_WILDCARD_ABOVE = 9

#: What every CDK token encoded in a string carries: ``${Token[...]}`` (a string), ``#{Token[...]}`` (a list element).
TOKEN_MARKS = ("${Token[", "#{Token[")


def is_deploy_time(text: object) -> bool:
    """True when ``text`` is a string holding a CDK token (:data:`TOKEN_MARKS`): its value is known only at deploy.
    The one test of "is this a token" for code without the CDK; the constructs' ``lazy.is_unresolved`` starts with
    it."""
    return isinstance(text, str) and any(mark in text for mark in TOKEN_MARKS)


def covered_by_wildcard(name: str, zone_name: str) -> bool:
    """True when ``*.<zone>`` or the apex ``<zone>`` covers ``name`` (a wildcard covers exactly one label)."""
    if is_deploy_time(name) or is_deploy_time(zone_name):
        return False
    if name == zone_name:
        return True
    suffix = "." + zone_name
    return name.endswith(suffix) and "." not in name[: -len(suffix)]


def certificate_names(zone_name: str, domain_names: list[str], wildcard: bool | None) -> list[str]:
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
        if not covered_by_wildcard(name, zone_name) and name not in names:
            names.append(name)
    return names


def issued_certificate_problem(zone_name: str, domain_names: list[str], wildcard: bool | None) -> str | None:
    """Why one issued certificate cannot carry the endpoints' ``domain_names`` (ACM's quota), or None."""
    if wildcard is False and len(domain_names) > AUTO_WILDCARD_ABOVE:
        return (f"{len(domain_names)} names with wildcard false; at most {AUTO_WILDCARD_ABOVE} specific names per "
                "issued certificate (leave wildcard unset or true, or import a certificate)")
    if is_deploy_time(zone_name) or not domain_names:
        return None
    total = len(certificate_names(zone_name, domain_names, wildcard))
    if total > ACM_MAX_NAMES_PER_CERTIFICATE:
        return (f"the certificate would need {total} names, more than ACM's default quota of "
                f"{ACM_MAX_NAMES_PER_CERTIFICATE} per certificate (names deeper than one label under the zone are "
                f"not covered by '*.{zone_name}')")
    return None


def certificate_region_problem(certificate_arn: str, region: str) -> str | None:
    """The operator requires the certificate in the cluster's region."""
    cert_region = certificate_arn.split(":")[3] if certificate_arn.count(":") >= 5 else None
    if cert_region is not None and cert_region != region:
        return f"must be in the stack's region {region!r}, the operator requires it (got region {cert_region!r})"
    return None
