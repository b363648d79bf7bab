"""The S3 checks of ``doctor``'s ``model`` family (registered on it by :mod:`.model`): an endpoint whose weights are
in S3 names the bucket's region (``model.s3.region``, default ``env.region``), its prefix holds a ``config.json`` and
weights, and a bucket encrypted with a customer-managed KMS key has that key in the config (``model.s3.kmsKeyArn``,
which grants the model's readers ``kms:Decrypt``). Read calls only: GetBucketLocation, ListObjectsV2,
GetBucketEncryption.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .base import FAIL, PASS, WARN, Context, Result, each

#: File names that hold weights a runtime loads (safetensors, PyTorch, GGUF).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
#: The most keys listed under a prefix (a model folder holds tens of files, a few hundred shards at most).
MAX_KEYS = 1000


def _s3_endpoints(ctx: Context) -> list[tuple[int, Any, Any]]:
    return [(i, ep, ep.model.s3) for i, ep in enumerate(ctx.config.endpoints)
            if not ep.is_jumpstart and ep.model.s3 is not None]


def _resource(ep: Any, s3: Any) -> str:
    return f"endpoint {ep.namespace}/{ep.name}: s3://{s3.bucket}/{s3.folder_prefix}"


def _field(i: int, *path: str) -> str:
    return ".".join((f"endpoints[{i}]", *path))


def bucket_region(ctx: Context, bucket: str) -> str | None:
    """The bucket's region (GetBucketLocation: none is us-east-1, EU is eu-west-1), None for no such bucket."""
    def read() -> str | None:
        found = ctx.aws.call("s3", "GetBucketLocation", Bucket=bucket, missing=("NoSuchBucket", "404"))
        if found is None:
            return None
        where = found.get("LocationConstraint") or "us-east-1"
        return "eu-west-1" if where == "EU" else where
    return ctx.shared(f"s3-region:{bucket}", read)


def check_region(ctx: Context) -> Iterator[Result]:
    for i, ep, s3 in _s3_endpoints(ctx):
        yield from each("model.s3-region", _resource(ep, s3), lambda i=i, ep=ep, s3=s3: _region(ctx, i, ep, s3))


def _region(ctx: Context, i: int, ep: Any, s3: Any) -> Result:
    resource, key = _resource(ep, s3), _field(i, "model.s3.region")
    actual = bucket_region(ctx, s3.bucket)
    if actual is None:
        return Result("model.s3-region", FAIL, resource, f"no bucket {s3.bucket}",
                      f"set {_field(i, 'model.s3.bucket')} to the bucket holding the weights")
    said = s3.region or ctx.region
    whence = f"{key} says {said}" if s3.region else f"{key} is not set, so the config says env.region ({said})"
    if actual != said:
        fix = (f"set {key}: {actual}" if s3.region else
               f"copy the weights to a bucket in {ctx.region} (the nodes' S3 gateway endpoint serves that region "
               f"only), or set {key}: {actual} if the nodes reach S3 in {actual} through a NAT gateway")
        return Result("model.s3-region", FAIL, resource, f"the bucket is in {actual}, and {whence}: the operator's "
                      "download asks the wrong region", fix)
    if actual != ctx.region:
        return Result("model.s3-region", WARN, resource, f"the bucket is in {actual}, as {key} says, and the stack is "
                      f"in {ctx.region}: an S3 gateway endpoint serves its own region only, so the nodes reach the "
                      "bucket only through a NAT gateway", f"copy the weights to a bucket in {ctx.region}")
    return Result("model.s3-region", PASS, resource, f"the bucket is in {actual}, the region the config says")


def check_files(ctx: Context) -> Iterator[Result]:
    for i, ep, s3 in _s3_endpoints(ctx):
        yield from each("model.s3-files", _resource(ep, s3), lambda i=i, ep=ep, s3=s3: _files(ctx, i, ep, s3))


def _files(ctx: Context, i: int, ep: Any, s3: Any) -> Result:
    resource, key = _resource(ep, s3), _field(i, "model.s3.prefix")
    prefix = s3.folder_prefix
    listed = ctx.aws.call("s3", "ListObjectsV2", Bucket=s3.bucket, Prefix=prefix, MaxKeys=MAX_KEYS,
                          missing=("NoSuchBucket",))
    if listed is None:
        return Result("model.s3-files", FAIL, resource, f"no bucket {s3.bucket}",
                      f"set {_field(i, 'model.s3.bucket')} to the bucket holding the weights")
    names = [o["Key"][len(prefix):] for o in listed.get("Contents") or []]
    top = [n for n in names if "/" not in n]
    weights = [n for n in top if n.endswith(WEIGHT_SUFFIXES)]
    if "config.json" in top and weights:
        size = sum(o.get("Size", 0) for o in listed.get("Contents") or [] if o["Key"][len(prefix):] in weights)
        return Result("model.s3-files", PASS, resource, f"config.json and {len(weights)} weight file(s) "
                      f"({size / 2**30:.1f} GiB)")
    missing = " and ".join(w for w, ok in (("config.json", "config.json" in top), ("weights (*.safetensors, *.bin)",
                                                                                    bool(weights))) if not ok)
    deeper = sorted({n.rsplit("/", 1)[0] for n in names if n.endswith("/config.json")})
    fix = (f"set {key} to the folder that holds them ({', '.join(prefix + d + '/' for d in deeper[:3])} holds a "
           "config.json)" if deeper else f"upload the model's files to s3://{s3.bucket}/{prefix}, or set {key} to "
           "the folder that holds them")
    shown = f"{len(names)} object(s)" + (" or more" if listed.get("IsTruncated") else "")
    return Result("model.s3-files", FAIL, resource, f"the prefix has no {missing} at its top ({shown} under it): "
                  "the runtime cannot load the model", fix)


def check_kms(ctx: Context) -> Iterator[Result]:
    for i, ep, s3 in _s3_endpoints(ctx):
        yield from each("model.s3-kms", _resource(ep, s3), lambda i=i, ep=ep, s3=s3: _kms(ctx, i, ep, s3))


def _kms(ctx: Context, i: int, ep: Any, s3: Any) -> Result:
    resource, key = _resource(ep, s3), _field(i, "model.s3.kmsKeyArn")
    found = ctx.aws.call("s3", "GetBucketEncryption", Bucket=s3.bucket,
                         missing=("ServerSideEncryptionConfigurationNotFoundError", "NoSuchBucket"))
    rules = ((found or {}).get("ServerSideEncryptionConfiguration") or {}).get("Rules") or []
    kms = [r.get("ApplyServerSideEncryptionByDefault") or {} for r in rules]
    kms = [d for d in kms if str(d.get("SSEAlgorithm", "")).startswith("aws:kms")]
    bucket_key = next((d.get("KMSMasterKeyID") for d in kms if d.get("KMSMasterKeyID")), None)
    if not kms or not bucket_key or bucket_key.startswith("alias/aws/"):
        return Result("model.s3-kms", PASS, resource, "no customer-managed KMS key by default (SSE-S3 or the AWS "
                      "managed key): nothing to grant")
    if s3.kms_key_arn is None:
        return Result("model.s3-kms", FAIL, resource, f"the bucket encrypts with the KMS key {bucket_key}, and the "
                      "config names none: the model's readers get no kms:Decrypt and the download is denied",
                      f"set {key}: the key's ARN ({bucket_key})")
    if bucket_key not in (s3.kms_key_arn, s3.kms_key_arn.rsplit("/", 1)[-1]):
        return Result("model.s3-kms", WARN, resource, f"the bucket's default key is {bucket_key}, and {key} is "
                      f"{s3.kms_key_arn}: objects encrypted with the bucket's key cannot be read",
                      f"set {key} to the bucket's key ({bucket_key})")
    return Result("model.s3-kms", PASS, resource, f"the bucket's KMS key is {key}")


#: The checks, for :mod:`.model` to register on the family: (ID, summary, resource, check).
CHECKS: tuple[tuple[str, str, Callable[[Context], str], Callable[[Context], Iterator[Result]]], ...] = (
    ("model.s3-region", "an S3 model's bucket is in the region the config says", lambda c: "S3 models", check_region),
    ("model.s3-files", "an S3 model's prefix holds config.json and weights", lambda c: "S3 models", check_files),
    ("model.s3-kms", "a bucket encrypted with a customer-managed key has the key in the config",
     lambda c: "S3 models", check_kms),
)
