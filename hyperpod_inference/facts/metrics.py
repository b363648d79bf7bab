"""Every metric, dimension and label the dashboards, alarms and Prometheus rules use, each with its source.

A metric that is not in these tables is not used anywhere in the library (a test checks the builders against them).
Sources were checked on 2026-12-01; ``note`` says where a source leaves something open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: AWS documentation pages and operator assets the tables cite.
HYPERPOD_OBSERVABILITY_DOC = ("https://docs.aws.amazon.com/sagemaker/latest/dg/"
                              "sagemaker-hyperpod-model-deployment-observability.html")
HYPERPOD_AUTOSCALING_DOC = ("https://docs.aws.amazon.com/sagemaker/latest/dg/"
                            "sagemaker-hyperpod-model-deployment-autoscaling.html")
HYPERPOD_GRAFANA_ASSET = ("https://github.com/aws/sagemaker-hyperpod-cluster-setup/blob/main/eks/cloudformation/"
                          "resources/observability-assets-creation/dashboards/templates/inference.json")
SAGEMAKER_METRICS_DOC = "https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html"
SAGEMAKER_MULTI_CONTAINER_DOC = "https://docs.aws.amazon.com/sagemaker/latest/dg/multi-container-metrics.html"
ALB_METRICS_DOC = ("https://docs.aws.amazon.com/elasticloadbalancing/latest/application/"
                   "load-balancer-cloudwatch-metrics.html")
NLB_METRICS_DOC = ("https://docs.aws.amazon.com/elasticloadbalancing/latest/network/"
                   "load-balancer-cloudwatch-metrics.html")
ALB_CONTROLLER_NAMING = ("https://github.com/kubernetes-sigs/aws-load-balancer-controller/blob/main/pkg/ingress/"
                         "model_build_load_balancer.go")
S3_METRICS_DOC = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/metrics-dimensions.html"


@dataclass(frozen=True)
class CloudWatchMetric:
    namespace: str
    name: str
    unit: str
    statistics: tuple[str, ...]
    dimensions: tuple[str, ...]
    source: str
    note: str = ""


@dataclass(frozen=True)
class PromMetric:
    name: str
    kind: str  # counter | gauge | histogram
    unit: str
    source: str
    note: str = ""


# ---------------------------------------------------------------------------------------------------- CloudWatch
SAGEMAKER_NS = "AWS/SageMaker"
ALB_NS = "AWS/ApplicationELB"
NLB_NS = "AWS/NetworkELB"
S3_NS = "AWS/S3"
#: The one variant a HyperPod-registered endpoint has (the autoscaling doc's CloudWatch trigger uses it).
VARIANT = "AllTraffic"
_SM_DIMS = ("EndpointName", "VariantName")
_HYPERPOD_NOTE = ("AWS documents Invocations for a HyperPod-registered endpoint (autoscaling doc); the page does not "
                  "list which other AWS/SageMaker metrics it emits, so alarms on this one treat missing data as "
                  "not breaching")

CLOUDWATCH: dict[str, CloudWatchMetric] = {m.name: m for m in (
    CloudWatchMetric(SAGEMAKER_NS, "Invocations", "None (count)", ("Sum", "SampleCount"), _SM_DIMS,
                     HYPERPOD_AUTOSCALING_DOC + " ; " + SAGEMAKER_MULTI_CONTAINER_DOC,
                     "the HyperPod autoscaling example's CloudWatch trigger (EndpointName, VariantName=AllTraffic)"),
    CloudWatchMetric(SAGEMAKER_NS, "Invocation4XXErrors", "None (count)", ("Average", "Sum"), _SM_DIMS,
                     SAGEMAKER_METRICS_DOC + " ; " + SAGEMAKER_MULTI_CONTAINER_DOC, _HYPERPOD_NOTE),
    CloudWatchMetric(SAGEMAKER_NS, "Invocation5XXErrors", "None (count)", ("Average", "Sum"), _SM_DIMS,
                     SAGEMAKER_METRICS_DOC + " ; " + SAGEMAKER_MULTI_CONTAINER_DOC, _HYPERPOD_NOTE),
    CloudWatchMetric(SAGEMAKER_NS, "ModelLatency", "Microseconds", ("Average", "Sum", "Min", "Max", "pNN"), _SM_DIMS,
                     SAGEMAKER_METRICS_DOC, _HYPERPOD_NOTE),
    CloudWatchMetric(ALB_NS, "RequestCount", "Count", ("Sum",), ("LoadBalancer",), ALB_METRICS_DOC,
                     "reported only while requests flow; the ALB is named by the load balancer controller"),
    CloudWatchMetric(ALB_NS, "HTTPCode_Target_4XX_Count", "Count", ("Sum",), ("LoadBalancer",), ALB_METRICS_DOC),
    CloudWatchMetric(ALB_NS, "HTTPCode_Target_5XX_Count", "Count", ("Sum",), ("LoadBalancer",), ALB_METRICS_DOC),
    CloudWatchMetric(ALB_NS, "TargetResponseTime", "Seconds", ("Average", "pNN"), ("LoadBalancer",),
                     ALB_METRICS_DOC),
    CloudWatchMetric(S3_NS, "BucketSizeBytes", "Bytes", ("Average", "Maximum"), ("BucketName", "StorageType"),
                     S3_METRICS_DOC, "daily; StorageType=StandardStorage"),
    CloudWatchMetric(S3_NS, "NumberOfObjects", "Count", ("Average",), ("BucketName", "StorageType"),
                     S3_METRICS_DOC, "daily; StorageType=AllStorageTypes"),
)}

#: The ALB the operator's load balancer controller creates for an Ingress outside a group is named
#: ``k8s-<namespace, alphanumerics, first 8>-<ingress name, first 8>-<hash>`` (the controller's buildLoadBalancerName),
#: so a SEARCH for that prefix finds the namespace's load balancers.
ALB_NAME_PREFIX = "k8s-"
ALB_NAME_NAMESPACE_CHARS = 8


def alb_name_prefix(namespace: str) -> str:
    """``k8s-<first 8 alphanumerics of the namespace>-``: the start of every ALB name of that namespace."""
    return f"{ALB_NAME_PREFIX}{''.join(c for c in namespace if c.isalnum())[:ALB_NAME_NAMESPACE_CHARS]}-"


# ----------------------------------------------------------------------------------- what an autoscaling trigger reads
@dataclass(frozen=True)
class TriggerDimensions:
    """A namespace whose metrics exist only per some dimensions: a CloudWatch trigger there that names none never
    gets a value (KEDA reads a metric without dimensions, which is never published), so the endpoint never scales."""

    namespace: str
    dimensions: tuple[str, ...]  # its metrics are published under these
    required: tuple[str, ...]  # a trigger must name each of these (empty: at least one of ``dimensions``)
    known_at_synth: bool  # can the config know the values (the SageMaker endpoint name) or not (an ALB's name)
    why: str
    source: str


TRIGGER_DIMENSIONS: dict[str, TriggerDimensions] = {t.namespace: t for t in (
    TriggerDimensions(SAGEMAKER_NS, _SM_DIMS, _SM_DIMS, True,
                      "a SageMaker endpoint's metrics are published per EndpointName and VariantName (AllTraffic for a "
                      "HyperPod-registered endpoint)", HYPERPOD_AUTOSCALING_DOC + " ; " + SAGEMAKER_METRICS_DOC),
    TriggerDimensions(ALB_NS, ("LoadBalancer", "TargetGroup", "AvailabilityZone"), (), False,
                      "every Application Load Balancer metric is published per LoadBalancer, TargetGroup or "
                      "AvailabilityZone, and the operator's load balancer controller names the ALB and its target "
                      "groups when it creates them, after the deploy", ALB_METRICS_DOC + " ; " + ALB_CONTROLLER_NAMING),
    TriggerDimensions(NLB_NS, ("LoadBalancer", "TargetGroup", "AvailabilityZone"), (), False,
                      "every Network Load Balancer metric is published per LoadBalancer, TargetGroup or "
                      "AvailabilityZone, named when the load balancer is created, after the deploy", NLB_METRICS_DOC),
)}
#: What to scale on instead: metrics whose every dimension the config knows.
SCALE_ON_INVOCATIONS = ("namespace: AWS/SageMaker, metricName: Invocations, dimensions EndpointName: {name} and "
                        "VariantName: AllTraffic")
SCALE_ON_PODS = ('a prometheusTrigger over the pod metrics (e.g. sum(rate(model_invocations_total{{namespace="{ns}",'
                 'resource_name="{ep}"}}[1m])) or model_concurrent_requests) in your Amazon Managed Prometheus '
                 'workspace')


def trigger_dimensions_problem(namespace: str, dimensions: list[str], *, endpoint_name: str | None, namespace_k8s: str,
                               name: str) -> str | None:
    """Why a CloudWatch trigger on ``namespace`` with ``dimensions`` (their names) can never fire, naming what to
    scale on instead; None when it can (or the namespace is not one this table knows)."""
    need = TRIGGER_DIMENSIONS.get(namespace)
    if need is None:
        return None
    missing = [d for d in need.required if d not in dimensions]
    if dimensions and not missing:
        return None
    pods = SCALE_ON_PODS.format(ns=namespace_k8s, ep=name)
    if need.known_at_synth:
        if endpoint_name is None:
            return (f"{need.why}, and this endpoint has no sagemakerEndpointName; set it and give dimensions "
                    f"EndpointName: <sagemakerEndpointName> and VariantName: {VARIANT}, or scale on {pods}")
        return (f"{need.why}: add {', '.join(missing) or 'the dimensions'} (EndpointName: {endpoint_name}, "
                f"VariantName: {VARIANT}), or the trigger never gets a value")
    instead = SCALE_ON_INVOCATIONS.format(name=endpoint_name) if endpoint_name else \
        "AWS/SageMaker Invocations (set sagemakerEndpointName)"
    return (f"{need.why}: with no dimensions this trigger never gets a value. Scale on {instead}, known at synth, or "
            f"on {pods}; or give the dimensions")


# ---------------------------------------------------------------------------------------------------- Prometheus
#: Served by each model pod's reverse-proxy sidecar on port 9113, path /metrics (spec.metrics.enabled, default on).
#: The labels the queries select on: ``namespace`` and ``resource_name`` (the custom resource's), ``resource_type``
#: (jumpstart | inference-endpoint) and ``pod_name`` (HYPERPOD_OBSERVABILITY_DOC); ``method`` (the asset selects
#: POST), ``status`` (the HTTP status code) and ``le`` (a histogram bucket's bound) (HYPERPOD_GRAFANA_ASSET).
PROMETHEUS: dict[str, PromMetric] = {m.name: m for m in (
    PromMetric("model_invocations_total", "counter", "requests", HYPERPOD_OBSERVABILITY_DOC),
    PromMetric("model_errors_total", "counter", "requests", HYPERPOD_OBSERVABILITY_DOC,
               "labelled by status (the HTTP code), as the operator's Grafana asset reads it"),
    PromMetric("model_concurrent_requests", "gauge", "requests", HYPERPOD_OBSERVABILITY_DOC),
    PromMetric("model_latency_milliseconds", "histogram", "milliseconds",
               HYPERPOD_OBSERVABILITY_DOC + " ; " + HYPERPOD_GRAFANA_ASSET,
               "read as model_latency_milliseconds_bucket with le (the asset's histogram_quantile)"),
    PromMetric("model_ttfb_milliseconds", "histogram", "milliseconds",
               HYPERPOD_OBSERVABILITY_DOC + " ; " + HYPERPOD_GRAFANA_ASSET,
               "read as model_ttfb_milliseconds_bucket with le"),
    PromMetric("lmcache:local_cache_usage", "gauge", "bytes", HYPERPOD_GRAFANA_ASSET, "kvCacheSpec on"),
    PromMetric("lmcache:remote_cache_usage", "gauge", "bytes", HYPERPOD_GRAFANA_ASSET, "kvCacheSpec on"),
    PromMetric("lmcache:lookup_hit_rate", "gauge", "ratio", HYPERPOD_GRAFANA_ASSET, "kvCacheSpec on"),
    PromMetric("router_cpu_usage_percent", "gauge", "percent", HYPERPOD_GRAFANA_ASSET,
               "intelligentRoutingSpec on"),
)}


def histogram_bucket(metric: str) -> str:
    """The series name of a histogram's buckets (``<name>_bucket``), for a histogram in :data:`PROMETHEUS`."""
    if PROMETHEUS[metric].kind != "histogram":
        raise ValueError(f"{metric} is not a histogram")
    return f"{metric}_bucket"


# -------------------------------------------------------------------------------------------------------- limits
#: A dashboard body holds 0 to 500 widgets; the grid is 24 units wide
#: (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/CloudWatch-Dashboard-Body-Structure.html).
DASHBOARD_MAX_WIDGETS = 500
DASHBOARD_GRID_WIDTH = 24
#: PutMetricAlarm: AlarmName 1-255 characters, AlarmDescription 0-1024
#: (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html).
ALARM_NAME_MAX = 255
ALARM_DESCRIPTION_MAX = 1024


# ---------------------------------------------------------------------------------------------- identifier shapes
SNS_TOPIC_ARN = r"^arn:aws(?:-[a-z]+)*:sns:([a-z0-9-]+):([0-9]{12}):[A-Za-z0-9_-]{1,256}$"
APS_WORKSPACE_ARN = r"^arn:aws(?:-[a-z]+)*:aps:([a-z0-9-]+):([0-9]{12}):workspace/ws-[A-Za-z0-9-]{1,64}$"


def arn_shape_problem(pattern: str, what: str, value: str) -> str | None:
    if re.match(pattern, value) is None:
        return f"must be {what}"
    return None
