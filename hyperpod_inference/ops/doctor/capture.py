"""The ``capture`` family of ``doctor``: the data capture's buckets. The names the stack would create are free (or
already this stack's), or the bucket ``capture.bucketName`` imports exists.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...facts import naming
from .base import Context, Family, Result, bucket_result, each

FAMILY = Family("capture", "the data capture's buckets")


@FAMILY.check("capture.bucket", "the capture bucket names are free, or the imported bucket exists",
              lambda c: "capture")
def check_capture_bucket(ctx: Context) -> Iterator[Result]:
    capture = ctx.config.capture
    if capture is None:
        return
    if capture.bucket_name:
        names = [(capture.bucket_name, True)]
    else:
        base = naming.capture_name_base(ctx.stack_name, ctx.account, ctx.region)
        names = [(naming.capture_bucket_name(base, ctx.account, ctx.region), False),
                 (naming.capture_log_bucket_name(base, ctx.account, ctx.region), False)]
    for name, imported in names:
        yield from each("capture.bucket", f"S3 bucket {name}",
                        lambda n=name, imp=imported: bucket_result(ctx, "capture.bucket", n, imported=imp,
                                                                   key="capture.bucketName"))
