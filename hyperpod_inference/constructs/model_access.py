"""Least-privilege IAM for the roles that read model weights and tokens: exactly one bucket prefix, one secret."""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..facts.rules import domain_suffix
from ..facts.safety import s3_folder_prefix, secret_resource_arn
from .lazy import literal_partition
from .nag import acknowledge_resource_wildcard


def grant_model_read(grantee: iam.IGrantable, *, bucket: str, prefix: str, kms_key_arn: str | None = None) -> iam.Grant:
    """``s3:GetObject`` on ``<bucket>/<folder>*`` and ``s3:ListBucket`` on the bucket limited to that folder
    (``s3:prefix``), plus ``kms:Decrypt`` through S3 when the bucket's key is given.

    The prefix is literal: ``*`` and ``?`` raise ``ValueError``. It is granted as a folder (``qwen`` -> ``qwen/``), so a
    sibling prefix (``qwen-other/``) is never reached; an empty prefix grants the whole bucket. The ARNs are in the
    partition of the grantee's stack (``arn:aws-cn:s3:::...`` in a China Region)."""
    partition = _partition(grantee)
    folder = s3_folder_prefix(prefix)
    objects = f"arn:{partition}:s3:::{bucket}/{folder}*"
    grant = iam.Grant.add_to_principal(grantee=grantee, actions=["s3:GetObject"], resource_arns=[objects])
    what = f"the literal folder {folder} of one bucket" if folder else "one bucket (no prefix given; warned)"
    acknowledge_resource_wildcard(grantee, objects, "Model weights are many objects under one prefix; the grant is "
                                  f"read-only on {what}")
    list_conditions = {"StringLike": {"s3:prefix": [f"{folder}*"]}} if folder else None
    grant = grant.combine(iam.Grant.add_to_principal(
        grantee=grantee, actions=["s3:ListBucket"], resource_arns=[f"arn:{partition}:s3:::{bucket}"],
        conditions=list_conditions))
    if kms_key_arn:
        grant = grant.combine(_grant_decrypt_via(grantee, kms_key_arn, "s3"))
    return grant


def grant_secret_read(grantee: iam.IGrantable, *, secret_arn: str, kms_key_arn: str | None = None) -> iam.Grant:
    """``secretsmanager:GetSecretValue`` (+ DescribeSecret) on exactly one secret, and ``kms:Decrypt`` through
    Secrets Manager when the secret uses a customer-managed key.

    A partial ARN (without Secrets Manager's ``-`` + six-character suffix) is granted as ``<arn>-??????``, AWS's
    documented pattern; an ARN whose name ends in ``-`` + six characters is taken as complete."""
    grant = iam.Grant.add_to_principal(grantee=grantee, actions=["secretsmanager:GetSecretValue",
                                                                 "secretsmanager:DescribeSecret"],
                                       resource_arns=[secret_resource_arn(secret_arn)])
    if kms_key_arn:
        grant = grant.combine(_grant_decrypt_via(grantee, kms_key_arn, "secretsmanager"))
    return grant


def _partition(grantee: iam.IGrantable) -> str:
    """The partition of the grantee's stack (:func:`~.lazy.literal_partition`); the deploy-time partition for a
    grantee that is no construct."""
    for scope in (grantee, grantee.grant_principal):
        if Construct.is_construct(scope):
            return literal_partition(scope)
    return Aws.PARTITION


def _grant_decrypt_via(grantee: iam.IGrantable, kms_key_arn: str, service: str) -> iam.Grant:
    """``kms:Decrypt`` on one key, only when the call comes through ``service`` in the key's region (its endpoint's
    DNS name: ``amazonaws.com.cn`` in China)."""
    region = kms_key_arn.split(":")[3]
    return iam.Grant.add_to_principal(
        grantee=grantee, actions=["kms:Decrypt"], resource_arns=[kms_key_arn],
        conditions={"StringEquals": {"kms:ViaService": f"{service}.{region}.{domain_suffix(region)}"}})
