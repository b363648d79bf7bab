"""Data capture, planned (:func:`plan_capture` -> :class:`CapturePlan`): the capture bucket and keys the stack makes
(or imports) for the endpoints that capture, their physical names, and the Athena and Glue analytics over them.

The capture pieces are made with the first endpoint that captures (an endpoint's plan says whether it does, and
whether it turns on the load balancer's access logs); what they are is decided here, once per stack.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import HyperPodConfig
from ..facts import naming
from .context import PlanContext


@dataclass(frozen=True)
class CaptureAnalyticsPlan:
    """The Glue tables, Athena workgroup and queries over the captured data (``capture.analytics``)."""

    bytes_scanned_cutoff_mb: int
    results_retention_days: int
    construct_id: str = "CaptureAnalytics"


@dataclass(frozen=True)
class CapturePlan:
    """The capture bucket and keys (``capture``): an existing bucket (``bucket_name``, in ``bucket_account``) or one
    the stack creates, named from ``name_base`` like every capture name; ``kms``: ``create``, ``aws-managed`` or a
    key ARN; ``analytics``: None when ``capture.analytics.enabled`` is false."""

    bucket_name: str | None
    bucket_account: str | None
    bucket_default_kms: bool
    prefix: str
    retention_days: int
    kms: str
    name_base: str
    analytics: CaptureAnalyticsPlan | None
    construct_id: str = "DataCapture"


def plan_capture(config: HyperPodConfig, context: PlanContext) -> CapturePlan | None:
    """The capture pieces of the stack; None without a ``capture`` section (the config then has no endpoint that
    captures)."""
    cap = config.capture
    if cap is None:
        return None
    settings = cap.analytics
    analytics = CaptureAnalyticsPlan(settings.bytes_scanned_cutoff_mb, settings.results_retention_days) \
        if settings.enabled else None
    return CapturePlan(
        bucket_name=cap.bucket_name, bucket_account=cap.bucket_account,
        bucket_default_kms=cap.bucket_encryption == "SSE-KMS", prefix=cap.prefix, retention_days=cap.retention_days,
        kms=cap.kms, name_base=naming.capture_name_base(context.name_scope, context.account, context.region),
        analytics=analytics)
