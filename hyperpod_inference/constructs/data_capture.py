"""Storage for the HyperPod inference operator's three-tier data capture (the AWS side).

Tiers and where they write (the operator appends a per-deployment hash to ``spec.dataCapture.s3Uri``):

* tier 1, SageMaker endpoint capture: ``<s3Uri>/<hash>/sme/``, written by SageMaker with the operator's execution
  role, encrypted with ``sagemakerEndpoint.kmsKeyId``;
* tier 2, ALB access logs: ``<s3Uri>/<hash>/alb/AWSLogs/<account>/...``, written by Elastic Load Balancing log
  delivery. ALB access logs support SSE-S3 only, so the bucket's *default* encryption is SSE-S3;
* tier 3, model-pod capture: ``<s3Uri>/<hash>/pod/``, written by the uploader in the model pod (through the S3 CSI
  driver's role), encrypted with ``modelPod.kmsKeyId``.

``DataCaptureStorage`` creates (or imports) the bucket and the customer-managed key, and grants writers exactly the
capture prefix. Imported buckets and keys are never re-policied: a new bucket policy would replace the owner's, and
CDK cannot edit an imported key's policy. For those, :meth:`DataCaptureStorage.owner_bucket_policy_statements` and
:meth:`DataCaptureStorage.owner_key_policy_statements` return the statements the owner must add.

Physical names are deterministic (``<base>-capture-<account>-<region>``, ``<base>-capture-logs-<account>-<region>``,
``alias/<base>-data-capture``; ``<base>`` is ``physical_name_prefix`` or the stack name) so that manifests carry real
values at synth time. Stacks with an explicit ``env`` get literal names. In an environment-agnostic stack the names
are built with ``Fn::Join`` over ``AWS::AccountId`` / ``AWS::Region`` (deploy-time values) and tier 2 gets only the
service-principal log-delivery statement (the legacy regional ELB account cannot be chosen without a literal region);
give the stack an ``env`` to get literal names, ``s3_uri`` and the legacy statement.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Annotations, Duration, RemovalPolicy, Stack, Validations, region_info
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.aws_kms import Key as _KmsKey
from constructs import Construct

from ..facts import naming, rules
from .lazy import is_unresolved, literal_partition, literal_stack_name
from .nag import render_resolved

ALB_LOG_DELIVERY_SERVICE = "logdelivery.elasticloadbalancing.amazonaws.com"
"""Service principal of ELB access-log delivery (used in every region; older regions also need their ELB account)."""

TIER_FOLDERS = {"sagemakerEndpoint": "sme", "loadBalancer": "alb", "modelPod": "pod"}
"""Operator folder of each tier under ``<s3Uri>/<hash>/`` (FACTS §2.2)."""

_S3_URI_MAX_LEN = 512  # CRD: dataCapture.s3Uri maxLength
_ABORT_INCOMPLETE_MULTIPART_DAYS = 7
# The bucket, account and KMS key ARN rules are in facts/rules.py (shared with the config); the names in facts/naming.py.


def _known(value: Any) -> bool:
    return value is not None and not is_unresolved(value)


class DataCaptureStorage(Construct):
    """The S3 bucket (and optional KMS key) the operator's data-capture tiers write into.

    :param bucket_name: ``None`` (default) creates the bucket with a deterministic name; a name imports an existing
        bucket, which is never re-policied (see :meth:`owner_bucket_policy_statements`).
    :param bucket_account: owner account of an imported bucket when known. The operator requires the bucket in the
        cluster's (= the stack's) account, so another account is an error.
    :param bucket_default_kms: the imported bucket's default encryption is SSE-KMS. ALB access logs cannot be
        delivered to such a bucket, so this together with ``alb_logs`` is an error. Default: False.
    :param prefix: S3 key prefix of every tier, without leading or trailing slash. Default: ``data-capture``.
    :param retention_days: days until captured objects (current and noncurrent versions) expire. Default: 365.
    :param kms: ``"create"`` (default) a customer-managed key with rotation; ``"none"``; or the ARN of an existing
        key in the stack's partition and region (IAM-side grants only, see :meth:`owner_key_policy_statements`).
    :param alb_logs: tier 2 (ALB access logs) is enabled for some endpoint: a created bucket gets the ELB
        log-delivery bucket policy. Default: True.
    :param removal_policy: applied to the created buckets and key. Default: ``RemovalPolicy.RETAIN``. The buckets do
        not auto-delete objects, so ``DESTROY`` fails on a non-empty bucket.
    :param bucket: a bucket object instead of ``bucket_name`` (e.g. one of your own). A ``s3.Bucket`` of this very
        stack gets its policy statements written like a created one; any other (another stack's, or imported with
        ``from_*``) is never re-policied.
    :param key: a key object instead of ``kms``, with the same rule for its key policy.
    :param physical_name_prefix: ``<base>`` of the deterministic names (lowercase letters, digits, '-'). Default:
        the stack name, lowercased (shortened with a hash when too long).
    """

    bucket: s3.IBucket
    """The capture bucket (created or imported)."""
    log_bucket: s3.IBucket | None
    """The server access log bucket of a created capture bucket; None for an imported bucket."""
    key: kms.IKey | None
    """The customer-managed key (created or imported); None with ``kms="none"``."""
    key_alias_arn: str | None
    """``arn:<partition>:kms:<region>:<account>:alias/<base>-data-capture`` for a created key, else None."""
    kms_key_id: str | None
    """What manifests put in ``kmsKeyId``: the alias ARN of a created key, the ARN of an imported key, or None."""
    bucket_name: str
    """The bucket name as a string: literal when the stack has an env or the bucket is imported."""
    bucket_arn: str
    """The bucket ARN (literal for an imported bucket)."""
    s3_uri: str
    """``s3://<bucket>/<prefix>``: the ``spec.dataCapture.s3Uri`` of every endpoint."""

    def __init__(self, scope: Construct, construct_id: str, *, bucket_name: str | None = None,
                 bucket_account: str | None = None, bucket_default_kms: bool = False,
                 prefix: str = "data-capture", retention_days: int = 365, kms: str = "create",
                 alb_logs: bool = True, removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
                 physical_name_prefix: str | None = None, bucket: s3.IBucket | None = None,
                 key: kms.IKey | None = None) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self._stack = stack
        self._account = stack.account
        self._region = stack.region
        self._partition = literal_partition(self)
        self.prefix = prefix
        self.alb_logs = alb_logs
        self.retention_days = retention_days
        conflicts = []
        if bucket is not None and bucket_name is not None:
            conflicts.append("bucket and bucket_name: give one")
        if key is not None and kms != "create":
            conflicts.append(f"key and kms={kms!r}: give the key object or the kms option")
        if conflicts:
            raise ValueError(f"DataCaptureStorage {self.node.path}: invalid props:\n"
                             + "\n".join(f"  - {p}" for p in conflicts))
        # A bucket or key of this very stack is policied like one created here; any other is never re-policied.
        owned_bucket = bucket is not None and isinstance(bucket, s3.Bucket) and Stack.of(bucket) is stack
        owned_key = key is not None and isinstance(key, _KmsKey) and Stack.of(key) is stack
        self.imported_bucket = bucket_name is not None or (bucket is not None and not owned_bucket)
        self.imported_key = (kms not in ("create", "none")) if key is None else not owned_key
        self._bucket_default_kms = bucket_default_kms

        self._validate(bucket_name=bucket_name, bucket_account=bucket_account,
                       bucket_default_kms=bucket_default_kms, prefix=prefix, retention_days=retention_days,
                       kms_option=kms, alb_logs=alb_logs, physical_name_prefix=physical_name_prefix)

        base = self._name_base(physical_name_prefix)
        account, region = self._account, self._region
        self.log_bucket = None
        self.bucket_name = (bucket_name if bucket_name is not None
                            else naming.capture_bucket_name(base, account, region))

        if bucket is not None:
            self.bucket = bucket
            self.bucket_name = bucket.bucket_name
        elif bucket_name is None:
            self.bucket = self._create_bucket(log_bucket_name=naming.capture_log_bucket_name(base, account, region),
                                              removal_policy=removal_policy)
        else:
            self.bucket = s3.Bucket.from_bucket_attributes(
                self, "Bucket", bucket_name=bucket_name,
                bucket_arn=f"arn:{self._partition}:s3:::{bucket_name}",
                account=bucket_account or self._account, region=self._region)
        self.bucket_arn = self.bucket.bucket_arn  # literal for an imported bucket (built above)

        self.key = None
        self.key_alias_arn = None
        self.kms_key_id = None
        if key is not None:
            self.key = key
            self.kms_key_id = key.key_arn
        elif kms == "create":
            alias_name = naming.capture_key_alias(base)
            self.key = self._create_key(alias_name, removal_policy)
            self.key_alias_arn = f"arn:{self._partition}:kms:{self._region}:{self._account}:{alias_name}"
            self.kms_key_id = self.key_alias_arn
        elif kms != "none":
            self.key = _import_key(self, kms)
            self.kms_key_id = self.key.key_arn

        self.s3_uri = f"s3://{self.bucket_name}/{prefix}"

        if self.alb_logs and not self.imported_bucket:
            self._add_alb_delivery_policy()

    def enable_alb_logs(self) -> None:
        """Tier 2 (ALB access logs) is now enabled for some endpoint: a bucket this stack policies gets the ELB
        log-delivery statements (once)."""
        if self.alb_logs:
            return
        if self._bucket_default_kms:
            raise ValueError(f"DataCaptureStorage {self.node.path}: ALB access logs (tier 2) cannot be delivered to a "
                             "bucket whose default encryption is SSE-KMS (bucket_default_kms)")
        self.alb_logs = True
        if not self.imported_bucket:
            self._add_alb_delivery_policy()

    def _add_alb_delivery_policy(self) -> None:
        for statement in self._alb_delivery_statements():
            self.bucket.add_to_resource_policy(statement)

    # ----------------------------------------------------------------------------------------------------- grants
    def grant_capture_write(self, grantee: iam.IGrantable, *, multipart: bool = False) -> iam.Grant:
        """Let ``grantee`` write captured objects under ``<bucket>/<prefix>/`` and encrypt them with the key.

        Grants ``s3:PutObject`` (plus ``s3:AbortMultipartUpload`` when ``multipart``, for the S3 CSI driver's role)
        on exactly ``<bucket ARN>/<prefix>/*``, and, with a key, ``kms:Decrypt`` + ``kms:GenerateDataKey`` on the key,
        only through S3 in this region and only for objects of this bucket/prefix (``kms:ViaService`` and the
        ``aws:s3:arn`` encryption context). A created key also gets the same statement in its key policy for
        principals of this stack; an imported key gets IAM-side grants only.

        Tier 1 needs no separate statement: SageMaker writes endpoint capture through S3 *with the endpoint's
        execution role* (for HyperPod, the operator's execution role, which ``sagemaker.amazonaws.com`` assumes), so
        granting that role covers tier 1 and a ``sagemaker.amazonaws.com`` service-principal statement would only
        widen the key policy.
        """
        s3_actions = ["s3:PutObject"] + (["s3:AbortMultipartUpload"] if multipart else [])
        grant = iam.Grant.add_to_principal(grantee=grantee, actions=s3_actions,
                                           resource_arns=[self._capture_objects_arn()])
        self._acknowledge_prefix_wildcard(grantee)
        if self.key is None:
            return grant
        actions = ["kms:Decrypt", "kms:GenerateDataKey"]
        conditions = self._kms_conditions()
        key_grant = iam.Grant.add_to_principal(grantee=grantee, actions=actions,
                                               resource_arns=[self.key.key_arn], conditions=conditions)
        if not self.imported_key and self._same_stack(grantee.grant_principal):
            # In a key policy Resource "*" means "this key" (the key's own ARN does not exist before the key).
            self.key.add_to_resource_policy(iam.PolicyStatement(
                principals=[grantee.grant_principal], actions=actions, resources=["*"], conditions=conditions))
        return grant.combine(key_grant)

    # ------------------------------------------------------------------------------------------------ values
    def tier_prefixes(self, hash_placeholder: str = "<hash>") -> dict[str, str]:
        """Where each tier writes, keyed by the operator's tier name, with the operator's per-deployment hash
        shown as ``hash_placeholder`` (the hash algorithm is not published)."""
        return {tier: f"{self.s3_uri}/{hash_placeholder}/{folder}/" for tier, folder in TIER_FOLDERS.items()}

    def owner_bucket_policy_statements(self) -> list[dict[str, Any]]:
        """Bucket-policy statements the owner of an *imported* bucket must add (TLS-only access, and ELB log
        delivery when ``alb_logs``). Empty for a created bucket: it already has them."""
        if not self.imported_bucket:
            return []
        arn = self.bucket_arn
        statements: list[dict[str, Any]] = [{
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": {"AWS": "*"},
            "Action": "s3:*",
            "Resource": [arn, f"{arn}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }]
        if self.alb_logs:
            # resolve() renders the service principal (a lazy value in CDK) as its literal name.
            statements += [self._stack.resolve(s.to_statement_json()) for s in self._alb_delivery_statements()]
        return statements

    def owner_key_policy_statements(self, principal_arns: list[str]) -> list[dict[str, Any]]:
        """Key-policy statements the owner of an *imported* key must add so that ``principal_arns`` (the roles
        passed to :meth:`grant_capture_write`) can use the key through S3. Empty for a created key or no key."""
        if not self.imported_key or not principal_arns:
            return []
        return [{
            "Sid": "AllowHyperPodDataCaptureViaS3",
            "Effect": "Allow",
            "Principal": {"AWS": list(principal_arns)},
            "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
            "Resource": "*",
            "Condition": self._kms_conditions(),
        }]

    # --------------------------------------------------------------------------------------------- internals
    def _capture_objects_arn(self) -> str:
        return f"{self.bucket_arn}/{self.prefix}/*"

    def _kms_conditions(self) -> dict[str, Any]:
        # S3 puts the object ARN in the encryption context (S3 Bucket Keys, which would put the bucket ARN there,
        # are off); the bucket ARN is listed for the Bucket-Key case and for multipart-upload bookkeeping.
        return {
            "StringEquals": {"kms:ViaService": f"s3.{self._region}.amazonaws.com"},
            "StringLike": {"kms:EncryptionContext:aws:s3:arn": [self.bucket_arn, self._capture_objects_arn()]},
        }

    def _alb_delivery_statements(self) -> list[iam.PolicyStatement]:
        resource = f"{self.bucket_arn}/{self.prefix}/*/{TIER_FOLDERS['loadBalancer']}/AWSLogs/{self._account}/*"
        statements = [iam.PolicyStatement(
            sid="AllowAlbAccessLogDelivery",
            principals=[iam.ServicePrincipal(ALB_LOG_DELIVERY_SERVICE)],
            actions=["s3:PutObject"],
            resources=[resource],
            conditions={"StringEquals": {"aws:SourceAccount": self._account}},
        )]
        legacy_account = self._legacy_elb_account()
        if legacy_account:
            # Regions older than August 2022 deliver with the regional ELB account; its requests carry no
            # aws:SourceAccount, so the statement cannot have that condition.
            statements.append(iam.PolicyStatement(
                sid="AllowAlbAccessLogDeliveryLegacyElbAccount",
                principals=[iam.ArnPrincipal(f"arn:{self._partition}:iam::{legacy_account}:root")],
                actions=["s3:PutObject"],
                resources=[resource],
            ))
        return statements

    def _legacy_elb_account(self) -> str | None:
        if not _known(self._region):
            Annotations.of(self).add_warning_v2(
                "hyperpod-inference:dataCaptureAlbRegionUnknown",
                "The stack region is a deploy-time value: the ALB log-delivery bucket policy names only the "
                f"{ALB_LOG_DELIVERY_SERVICE} service principal. Regions that still deliver with their legacy ELB "
                "account need a stack env with a literal region.")
            return None
        return region_info.RegionInfo.get(self._region).elbv2_account

    def _same_stack(self, principal: iam.IPrincipal) -> bool:
        # A key-policy principal from another stack would make this stack depend on that one (and KMS rejects
        # principals that do not exist yet); the default key policy's account statement already lets IAM
        # policies in this account use the key, so those principals get the IAM-side grant only.
        return Construct.is_construct(principal) and Stack.of(principal) is self._stack

    def _acknowledge_prefix_wildcard(self, grantee: iam.IGrantable) -> None:
        principal = grantee.grant_principal
        if not Construct.is_construct(principal):
            return
        resource = self._stack.resolve(self._capture_objects_arn())
        rendered = render_resolved(resource)
        Validations.of(principal).acknowledge(Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{rendered}]",
            reason="Data capture writes one object per record under the capture prefix; object keys are generated "
                   "by the operator, so the grant is the prefix (<bucket>/<prefix>/*), never the whole bucket."))

    def _name_base(self, physical_name_prefix: str | None) -> str:
        if physical_name_prefix is not None:
            return physical_name_prefix
        return naming.capture_name_base(literal_stack_name(self._stack), self._account, self._region)

    def _create_bucket(self, *, log_bucket_name: str, removal_policy: RemovalPolicy) -> s3.Bucket:
        # The log bucket is written by the S3 logging service through a bucket policy (not the log-delivery ACL,
        # which BUCKET_OWNER_ENFORCED forbids): opt this construct into that CDK behaviour whatever the app sets.
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        expire = Duration.days(self.retention_days)
        # S3 server access logs cannot be delivered to a bucket whose default encryption is SSE-KMS: SSE-S3.
        log_bucket = s3.Bucket(
            self, "AccessLogsBucket",
            bucket_name=log_bucket_name,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,  # log records are evidence: an overwrite or delete keeps the previous version
            lifecycle_rules=[s3.LifecycleRule(
                id="expire-access-logs", expiration=expire, noncurrent_version_expiration=expire,
                abort_incomplete_multipart_upload_after=Duration.days(_ABORT_INCOMPLETE_MULTIPART_DAYS))],
            removal_policy=removal_policy,
        )
        # No AwsSolutions-S1 acknowledgment is needed here: cdk-nag recognises a bucket that is the target of
        # another bucket's server access logs as a log bucket (a log bucket cannot log to itself).
        self.log_bucket = log_bucket
        # Default encryption SSE-S3: ALB access logs (tier 2) cannot be delivered to an SSE-KMS-default bucket.
        # Tiers 1 and 3 encrypt their objects with the customer-managed key through kmsKeyId.
        return s3.Bucket(
            self, "Bucket",
            bucket_name=self.bucket_name,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=log_bucket,
            server_access_logs_prefix=f"{self.bucket_name}/",
            lifecycle_rules=[s3.LifecycleRule(
                id="expire-data-capture", expiration=expire, noncurrent_version_expiration=expire,
                abort_incomplete_multipart_upload_after=Duration.days(_ABORT_INCOMPLETE_MULTIPART_DAYS))],
            removal_policy=removal_policy,
        )

    def _create_key(self, alias_name: str, removal_policy: RemovalPolicy) -> kms.Key:
        # The key policy keeps CDK's default account-root statement (lets IAM policies of this account use the
        # key); grant_capture_write adds one statement per writer, scoped to S3 and to the capture prefix.
        key = kms.Key(self, "Key", enable_key_rotation=True, removal_policy=removal_policy,
                      description=f"HyperPod inference data capture: s3://{self.bucket_name}/{self.prefix}")
        kms.Alias(self, "KeyAlias", alias_name=alias_name, target_key=key, removal_policy=removal_policy)
        return key

    # -------------------------------------------------------------------------------------------- validation
    def _validate(self, *, bucket_name: str | None, bucket_account: str | None, bucket_default_kms: bool,
                  prefix: str, retention_days: int, kms_option: str, alb_logs: bool,
                  physical_name_prefix: str | None) -> None:
        problems: list[str] = []
        problems += self._validate_bucket(bucket_name, bucket_account, bucket_default_kms, alb_logs)
        problems += _validate_prefix(prefix)
        problems += _validate_retention(retention_days)
        problems += self._validate_kms(kms_option)
        problems += self._validate_name_prefix(physical_name_prefix)
        if not problems and bucket_name is not None and _known(bucket_name) and _known(prefix):
            uri = f"s3://{bucket_name}/{prefix}/<hash>/pod/"
            if len(uri) > _S3_URI_MAX_LEN:
                problems.append(f"prefix: s3://<bucket>/<prefix> plus the operator's tier folders exceeds the "
                                f"CRD's {_S3_URI_MAX_LEN} characters")
        if problems:
            raise ValueError(f"DataCaptureStorage {self.node.path}: invalid props:\n"
                             + "\n".join(f"  - {p}" for p in problems))

    def _validate_bucket(self, bucket_name: str | None, bucket_account: str | None, bucket_default_kms: bool,
                         alb_logs: bool) -> list[str]:
        problems = []
        if bucket_name is not None and _known(bucket_name):
            problem = rules.bucket_name_problem(bucket_name)
            if problem:
                problems.append(f"bucket_name: {bucket_name!r} {problem}")
        if bucket_account is not None and _known(bucket_account):
            if problem := rules.account_problem(bucket_account):
                problems.append(f"bucket_account: {bucket_account!r} {problem}")
            elif _known(self._account) and bucket_account != self._account:
                problems.append(f"bucket_account: the bucket is owned by {bucket_account}, but the stack (the "
                                f"cluster) is in {self._account}; the operator requires the capture bucket in "
                                "the cluster's account")
        if bucket_default_kms and bucket_name is None:
            problems.append("bucket_default_kms: describes an imported bucket (bucket_name); a created bucket "
                            "always uses SSE-S3 default encryption")
        elif bucket_default_kms and alb_logs:
            problems.append("bucket_default_kms: ALB access logs (alb_logs, tier 2) cannot be delivered to a "
                            "bucket whose default encryption is SSE-KMS; disable alb_logs or use an SSE-S3 bucket")
        return problems

    def _validate_kms(self, kms_option: str) -> list[str]:
        if kms_option in ("create", "none") or not _known(kms_option):
            return []
        if rules.kms_key_arn_problem(kms_option):
            return [f"kms: {kms_option!r} must be 'create', 'none' or a key ARN "
                    "arn:<partition>:kms:<region>:<account>:key/<key id> (not an alias)"]
        partition, _, key_region, _ = rules.arn_parts(kms_option)
        problems = []
        if _known(self._partition) and partition != self._partition:
            problems.append(f"kms: the key is in partition {partition}, the stack in {self._partition}")
        if _known(self._region) and key_region != self._region:
            problems.append(f"kms: the key is in {key_region}, but S3 needs the key in the bucket's region "
                            f"({self._region})")
        return problems

    def _validate_name_prefix(self, physical_name_prefix: str | None) -> list[str]:
        if physical_name_prefix is None or not _known(physical_name_prefix):
            return []
        problem = naming.capture_name_prefix_problem(physical_name_prefix, self._account, self._region)
        return [f"physical_name_prefix: {physical_name_prefix!r} {problem}"] if problem else []


def _validate_prefix(prefix: str) -> list[str]:
    if isinstance(prefix, str) and is_unresolved(prefix):
        return []
    problem = rules.capture_prefix_problem(prefix)
    return [f"prefix: {prefix!r} {problem}"] if problem else []


def _validate_retention(retention_days: int) -> list[str]:
    if isinstance(retention_days, bool) or not isinstance(retention_days, int) or retention_days < 1:
        return [f"retention_days: must be a whole number of days >= 1 (got {retention_days!r})"]
    return []


def _import_key(scope: Construct, key_arn: str) -> kms.IKey:
    return kms.Key.from_key_arn(scope, "Key", key_arn)
