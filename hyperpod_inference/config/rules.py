"""One home for every pattern and limit the config enforces (CRD rules from the operator, AWS identifier shapes,
Kubernetes naming). Each fact lives here once; models and constructs import it."""

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
KMS_KEY_ID_CRD = r"^[a-zA-Z0-9:/_-]*$"  # dataCapture.*.kmsKeyId
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
HYPERPOD_CLUSTER_ARN = r"^arn:aws:sagemaker:([a-z0-9-]+):([0-9]{12}):cluster/[a-z0-9]{12}$"
IAM_ROLE_ARN = r"^arn:aws:iam::([0-9]{12}):role/[A-Za-z0-9_+=,.@/-]+$"
OIDC_PROVIDER_ARN = r"^arn:aws:iam::([0-9]{12}):oidc-provider/oidc\.eks\.([a-z0-9-]+)\.amazonaws\.com/id/[A-Za-z0-9]+$"
VPC_ID = r"^vpc-[0-9a-f]{8,17}$"
SUBNET_ID = r"^subnet-[0-9a-f]{8,17}$"
SECURITY_GROUP_ID = r"^sg-[0-9a-f]{8,17}$"
S3_BUCKET_NAME = r"^(?!xn--)(?!sthree-)(?!.*-s3alias$)(?!.*--ol-s3$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
S3_PREFIX = r"^[A-Za-z0-9!_.*'()/-]*$"
KMS_KEY_ARN = r"^arn:aws:kms:([a-z0-9-]+):([0-9]{12}):key/[a-f0-9-]{36}$|^arn:aws:kms:([a-z0-9-]+):([0-9]{12}):key/mrk-[a-f0-9]{32}$"
SECRETS_MANAGER_ARN = r"^arn:aws:secretsmanager:([a-z0-9-]+):([0-9]{12}):secret:[A-Za-z0-9/_+=.@-]+$"
FSX_ID = r"^fs-[0-9a-f]{8,17}$"
ABSOLUTE_PATH = r"^/[^\0]*$"
JUMPSTART_MODEL_ID = r"^[a-zA-Z0-9][a-zA-Z0-9._-]*$"

CLUSTER_ARN_RE = re.compile(HYPERPOD_CLUSTER_ARN)
IAM_ROLE_ARN_RE = re.compile(IAM_ROLE_ARN)
OIDC_RE = re.compile(OIDC_PROVIDER_ARN)
KMS_KEY_ARN_RE = re.compile(KMS_KEY_ARN)
SECRETS_ARN_RE = re.compile(SECRETS_MANAGER_ARN)
ACM_ARN_RE = re.compile(ACM_ARN_CRD)

# Names the stack never creates as "owned" namespaces: system namespaces that exist on every cluster.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease", "hyperpod-inference-system"})


def is_dns_subdomain(name: str) -> bool:
    return len(name) <= 253 and re.match(DNS1123_SUBDOMAIN, name) is not None


def domain_within_zone(domain: str, zone: str) -> bool:
    zone = zone.rstrip(".").lower()
    return domain == zone or domain.endswith("." + zone)

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
    OIDC_PROVIDER_ARN: "an EKS IAM OIDC provider ARN (arn:aws:iam::<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<id>)",
    VPC_ID: "a VPC ID (vpc-...)",
    SUBNET_ID: "a subnet ID (subnet-...)",
    SECURITY_GROUP_ID: "a security group ID (sg-...)",
    S3_BUCKET_NAME: "an S3 bucket name (3-63 lowercase letters, digits, '.', '-')",
    S3_PREFIX: "an S3 key prefix",
    KMS_KEY_ARN: "a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>)",
    SECRETS_MANAGER_ARN: "a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>)",
    FSX_ID: "an FSx file system ID (fs-...)",
    ABSOLUTE_PATH: "an absolute path",
    JUMPSTART_MODEL_ID: "a JumpStart model ID",
    SECRET_KEY: "a Secret data key (letters, digits, '-', '_', '.')",
}
