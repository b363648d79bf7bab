"""The S3 bucket the operator writes TLS certificates to (created per stack, or imported)."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ...facts import naming, rules
from ...facts import operator as facts
from ...facts.operator import OPERATOR_MANAGED_POLICY, TLS_BUCKET_PREFIX
from ..lazy import is_unresolved, literal_stack_name
from ._common import _acknowledge, _nag_iam5, _nag_value, _raise_if

_OPERATOR_OBJECT_TAG = facts.OPERATOR_OBJECT_TAG
_S3_ACCESS_LOGS_USE_BUCKET_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"


class TlsBucket(Construct):
    """The S3 bucket the operator writes TLS certificates to.

    ``bucket_name=None`` creates ``hyperpod-tls-<scope>-<account>-<region>`` (``<scope>``: ``name_scope``, default
    the stack's name, so two stacks never collide): TLS-only, Block Public Access, SSE-S3, versioned,
    bucket-owner-enforced, retained on stack deletion, with server access logs in a separate retained bucket. Its name
    lies under the managed policy's ``hyperpod-tls*`` statements, so the execution role needs nothing more.

    A name imports an existing bucket; it is never re-policied. If the name does not start with ``hyperpod-tls``
    (or is not known at synth time), the managed policy does not cover it: the operator's certificates for this stack
    then go under ``<bucket>/hyperpod-inference/<scope>/`` (:func:`naming.tls_certificate_prefix`; ``s3_uri`` carries
    it, so every custom resource's ``tlsCertificateOutputS3Uri`` does), and :meth:`grant_operator_access` gives the
    execution role the managed policy's S3 statements on that prefix only, never on the rest of the bucket.

    ``bucket`` takes a bucket object instead (e.g. one of your own stack); it is not re-policied either, and its name
    decides the same way.

    Attributes: ``bucket`` (s3.IBucket), ``bucket_name``, ``object_prefix`` (the key prefix, no trailing ``/``, for a
    bucket the managed policy does not cover; else None), ``s3_uri`` (``s3://<bucket>`` or
    ``s3://<bucket>/<object_prefix>/``), ``managed_policy_covers``, ``created`` and ``access_log_bucket`` (created
    buckets only, else None).
    """

    def __init__(self, scope: Construct, construct_id: str, *, bucket_name: str | None = None,
                 bucket: s3.IBucket | None = None, name_scope: str | None = None) -> None:
        super().__init__(scope, construct_id)
        self.access_log_bucket: s3.Bucket | None = None
        if bucket is not None:
            if bucket_name is not None:
                _raise_if(["give bucket or bucket_name, not both"], "TlsBucket")
            # The caller's bucket: never re-policied here; its name decides whether the managed policy covers it.
            self.bucket = bucket
            self.bucket_name = bucket.bucket_name
            self.created = False
            self.managed_policy_covers = (not is_unresolved(self.bucket_name)
                                          and self.bucket_name.startswith(TLS_BUCKET_PREFIX))
        elif bucket_name is None:
            stack = Stack.of(self)
            # Deliver access logs through a bucket policy on the log bucket, not the LogDeliveryWrite ACL, so both
            # buckets can keep ACLs disabled (BucketOwnerEnforced). Scoped to this construct's subtree.
            self.node.set_context(_S3_ACCESS_LOGS_USE_BUCKET_POLICY, True)
            self.access_log_bucket = s3.Bucket(
                self,
                "AccessLogs",
                enforce_ssl=True,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                encryption=s3.BucketEncryption.S3_MANAGED,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                versioned=True,  # log records are evidence: an overwrite or delete keeps the previous version
                lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365),
                                                  noncurrent_version_expiration=Duration.days(365))],
                removal_policy=RemovalPolicy.RETAIN,
            )
            physical_name = naming.tls_bucket_name(name_scope or literal_stack_name(stack), stack.account, stack.region)
            self.bucket: s3.IBucket = s3.Bucket(
                self,
                "Bucket",
                bucket_name=physical_name,
                enforce_ssl=True,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                encryption=s3.BucketEncryption.S3_MANAGED,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                versioned=True,
                removal_policy=RemovalPolicy.RETAIN,
                server_access_logs_bucket=self.access_log_bucket,
                server_access_logs_prefix="tls-bucket/",
            )
            # The TLS-only bucket policies stay with their retained buckets.
            for bucket in (self.access_log_bucket, self.bucket):
                bucket.policy.apply_removal_policy(RemovalPolicy.RETAIN)
            self.created = True
            # The physical name itself (not a Ref), so manifests get the real name at synth time.
            self.bucket_name: str = physical_name
            # Built from the prefix above, so covered even while account/region are tokens.
            self.managed_policy_covers = True
        else:
            self._validate_bucket_name(bucket_name)
            self.bucket = s3.Bucket.from_bucket_name(self, "Bucket", bucket_name)
            self.bucket_name = bucket_name
            self.created = False
            # A deploy-time name cannot be checked: grant explicitly (harmless if the policy also covers it).
            self.managed_policy_covers = (not is_unresolved(bucket_name)
                                          and bucket_name.startswith(TLS_BUCKET_PREFIX))
        # A bucket the managed policy does not cover is shared with whatever else its owner keeps there: this stack's
        # certificates get their own folder, and the grant names only that folder.
        self.object_prefix: str | None = (
            None if self.managed_policy_covers
            else naming.tls_certificate_prefix(name_scope or literal_stack_name(self)))
        self.s3_uri = (f"s3://{self.bucket_name}" if self.object_prefix is None
                       else f"s3://{self.bucket_name}/{self.object_prefix}/")

    def grant_operator_access(self, grantee: iam.IGrantable) -> iam.Grant:
        """Give the operator's execution role what the managed policy gives for ``hyperpod-tls*`` buckets, on this
        stack's folder of this bucket (``object_prefix``). A no-op (``iam.Grant.drop``) when the managed policy
        already covers the bucket.

        Mirrors the managed policy (v4), scoped to ``<bucket>/<object_prefix>/*``: DeleteObject; GetObject on objects
        tagged ``CreatedBy=HyperPodInference``; PutObject/PutObjectTagging only with that tag in the request. Every
        statement keeps the policy's ``aws:ResourceAccount = ${aws:PrincipalAccount}`` condition.

        DeleteObject is scoped by the folder, not by the tag: S3 does not evaluate ``s3:ExistingObjectTag`` for
        DeleteObject ("When granting permissions for the PUT Object and DELETE Object operations, this condition key
        is not supported", Amazon S3 User Guide, *Tagging and access control policies*), so a tag condition there
        would deny every delete. The folder holds only what the operator wrote for this stack.

        ListBucket stays on the bucket, as in the managed policy, without an ``s3:prefix`` condition: the operator's
        list calls (if any) are not documented, and nothing shows that they pass a prefix; a prefix condition would
        deny a list without one. ListBucket reveals key names, not objects.
        """
        if self.managed_policy_covers:
            return iam.Grant.drop(grantee, f"{self.bucket_name} is covered by {OPERATOR_MANAGED_POLICY}")
        same_account = {"aws:ResourceAccount": "${aws:PrincipalAccount}"}
        tag_key, tag_value = _OPERATOR_OBJECT_TAG
        objects = [self.bucket.arn_for_objects(f"{self.object_prefix}/*")]
        grant = iam.Grant.add_to_principal(
            grantee=grantee, actions=["s3:DeleteObject"], resource_arns=objects,
            conditions={"StringEquals": dict(same_account)},
        )
        for actions, condition in (
            (["s3:GetObject"], {f"s3:ExistingObjectTag/{tag_key}": tag_value}),
            (["s3:PutObject", "s3:PutObjectTagging"], {f"s3:RequestObjectTag/{tag_key}": tag_value}),
        ):
            grant = grant.combine(iam.Grant.add_to_principal(
                grantee=grantee, actions=actions, resource_arns=objects,
                conditions={"StringEquals": {**same_account, **condition}},
            ))
        grant = grant.combine(iam.Grant.add_to_principal(
            grantee=grantee, actions=["s3:ListBucket"], resource_arns=[self.bucket.bucket_arn],
            conditions={"StringEquals": dict(same_account)},
        ))
        self._acknowledge_object_wildcard(grantee)
        return grant

    def _acknowledge_object_wildcard(self, grantee: iam.IGrantable) -> None:
        principal = grantee.grant_principal
        if not isinstance(principal, Construct) or is_unresolved(self.bucket_name):
            return
        policy = principal.node.try_find_child("DefaultPolicy") or principal
        partition = _nag_value(Stack.of(self).partition, "AWS::Partition")
        _acknowledge(policy, {
            _nag_iam5(f"arn:{partition}:s3:::{self.bucket_name}/{self.object_prefix}/*"):
                f"The operator writes, reads and deletes TLS certificate objects under generated keys in this stack's "
                f"folder {self.object_prefix}/ of this one bucket, nowhere else in it; reads and writes are limited to "
                "objects tagged CreatedBy=HyperPodInference, as in the managed policy for hyperpod-tls* buckets.",
        })

    @staticmethod
    def _validate_bucket_name(bucket_name: str) -> None:
        if is_unresolved(bucket_name):
            return
        errors = []
        if bucket_name.startswith("s3://"):
            errors.append("give the bucket name, not an s3:// URI")
        elif problem := rules.bucket_name_problem(bucket_name):
            errors.append(f"{problem} (got {bucket_name!r})")
        _raise_if(errors, "bucket_name")
