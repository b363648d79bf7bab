"""Facts of the operator's production fields (InferenceEndpointConfig v1 / JumpStartModel v1): enums, ranges and
patterns (which operator version has which field is the release table's, :mod:`.operator`). Stdlib only.

Patterns are anchored and escaped. Where the CRD's own pattern is looser, the one here is stricter and says why:
- ``kvCacheSpec.l2CacheSpec.l2CacheBackend``: the CRD has ``(?i)redis|tieredstorage`` (unanchored, any case);
  here exactly ``redis`` or ``tieredstorage``.
- ``prometheusTrigger.serverAddress``: the CRD also accepts the empty string and any dotted host part; here an Amazon
  Managed Prometheus workspace URL with a region.
- JumpStart ``model.modelVersion``: the CRD leaves the dots unescaped (``1x2y3`` passes); here ``1.2.3``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from .versions import Version

# --- enums: the one home of each (config/production.py types its fields Literal[<tuple>]) -------------------------
METRIC_TYPES = ("Value", "Average")  # autoScalingSpec.*Trigger*.metricType
ROUTING_STRATEGIES = ("prefixaware", "kvaware", "session", "roundrobin")  # intelligentRoutingSpec.routingStrategy
ROUTING_ALGORITHMS = ("least_outstanding_requests", "round_robin")  # loadBalancer.routingAlgorithm
L2_CACHE_BACKENDS = ("redis", "tieredstorage")  # kvCacheSpec.l2CacheSpec.l2CacheBackend
PORT_NAMES = ("http", "grpc")  # worker.modelInvocationPort.name
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")  # core NodeSelectorRequirement
PROBE_SCHEMES = ("HTTP", "HTTPS")  # core HTTPGetAction.scheme

# --- ranges (inclusive) -------------------------------------------------------------------------------------------
TRIGGER_LIST_MAX = 100  # cloudWatchTriggerList / prometheusTriggerList maxItems
IDLE_TIMEOUT_RANGE = (1, 4000)  # loadBalancer.idleTimeoutSeconds (v3.3)
SCRAPE_INTERVAL_RANGE = (5, 300)  # metrics.metricsScrapeIntervalSeconds
METRICS_PORT_RANGE = (1024, 65535)  # metrics.modelMetrics.port
OVERFLOW_STATUS_RANGE = (400, 599)  # worker.requestLimits.overflowStatusCode
JSM_ENV_MAX = 100  # JumpStartModel environmentVariables maxItems
ADDITIONAL_CONFIGS_MAX = 10  # JumpStartModel model.additionalConfigs maxItems
ROLE_ARN_LENGTH = (20, 2048)  # JumpStartModel server.executionRole, model.gatedModelDownloadRole
JUMPSTART_MODEL_VERSION_LENGTH = (5, 14)
NODE_AFFINITY_WEIGHT_RANGE = (1, 100)  # core PreferredSchedulingTerm.weight
TAG_KEY_MAX, TAG_VALUE_MAX = 128, 256  # SageMaker tags (spec.tags become the endpoint's tags)

# CRD defaults, written only when the user sets the field; used by rules that compare against an unset field.
AUTOSCALING_DEFAULTS = {"minReplicaCount": 1, "maxReplicaCount": 5}
# autoScalingSpec.cloudWatchTrigger (CRD defaults): what KEDA queries when the field is unset.
CLOUDWATCH_TRIGGER_DEFAULTS = {"metricStat": "Average", "metricCollectionPeriod": 300, "metricType": "Average"}

# --- patterns -----------------------------------------------------------------------------------------------------
AMP_WORKSPACE_URL = r"^https://aps-workspaces\.([a-z]{2}(?:-[a-z]+)+-[0-9])\.amazonaws\.com/workspaces/(ws-[a-zA-Z0-9-]+)$"
METRICS_PATH = r"^/[a-zA-Z0-9\-_./]*$"
HEALTH_CHECK_PATH = r"^/[A-Za-z0-9._/-]*$"
JSM_MODEL_ID = r"^[a-zA-Z0-9](?:-*[a-zA-Z0-9]){0,62}$"  # JumpStartModel model.modelId and model.modelHubName (CRD)
MIG_PROFILE = r"^mig-[0-9a-z.]+$"  # CRD ^mig-.*$ ; a MIG profile such as mig-1g.10gb
JUMPSTART_MODEL_VERSION = r"^\d{1,4}\.\d{1,4}\.\d{1,4}$"
JSM_ROLE_ARN = r"^arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$"
ENV_NAME = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
# Kubernetes resource quantity (the usual decimal / binary suffixes), and a resource name (cpu, nvidia.com/gpu, ...).
QUANTITY = r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|Pi|Ei|K|M|G|T|P|E)?$"
RESOURCE_NAME = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$"
LABEL_KEY = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"

AMP_WORKSPACE_RE = re.compile(AMP_WORKSPACE_URL)
#: The well-known node label that carries a node's instance type (what placement by instance type selects on).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# Node label keys users write that no node carries (samples/README: the term never matches), with the real one.
MISSPELLED_NODE_LABELS = {"node.kubernetes.io/instanceType": INSTANCE_TYPE_LABEL,
                          "kubernetes.io/instance-type": INSTANCE_TYPE_LABEL}

# --- extended resources -------------------------------------------------------------------------------------------
NVIDIA_GPU = "nvidia.com/gpu"
NEURON = "aws.amazon.com/neuron"
EXTENDED_RESOURCES = (NVIDIA_GPU, NEURON, "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice")

# Readable names for the patterns above in error messages ("must be <description>").
PATTERN_DESCRIPTIONS = {
    AMP_WORKSPACE_URL: "an Amazon Managed Prometheus workspace URL "
                       "(https://aps-workspaces.<region>.amazonaws.com/workspaces/ws-<id>)",
    METRICS_PATH: "an absolute URL path (letters, digits, '-', '_', '.', '/')",
    HEALTH_CHECK_PATH: "an absolute URL path (letters, digits, '-', '_', '.', '/')",
    MIG_PROFILE: "a MIG profile such as mig-1g.10gb",
    JSM_MODEL_ID: "a JumpStart name (letters, digits and '-', at most 63, starting and ending alphanumeric)",
    JUMPSTART_MODEL_VERSION: "a version of the form 1.2.3",
    JSM_ROLE_ARN: "an IAM role ARN (arn:aws:iam::<account>:role/<name>)",
    QUANTITY: "a Kubernetes quantity such as 500m, 4, 16Gi",
    RESOURCE_NAME: "a Kubernetes resource name such as cpu, memory, nvidia.com/gpu",
    LABEL_KEY: "a Kubernetes label key such as topology.kubernetes.io/zone",
}

_SUFFIX = {"m": 1e-3, "": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY_RE = re.compile(QUANTITY)


def quantity_value(q: str | int) -> float:
    """``"500m"`` -> 0.5, ``"16Gi"`` -> 17179869184, ``4`` -> 4 (for comparing requests with limits)."""
    if isinstance(q, int):
        return float(q)
    m = _QUANTITY_RE.match(q)
    if m is None:
        raise ValueError(f"not a quantity: {q!r}")
    number = q[: len(q) - len(m.group(2) or "")]
    return float(number) * _SUFFIX[m.group(2) or ""]


# --- what the runtime presets set, and the config key that sets it (args / env a user must not repeat) -------------
PRESET_FLAGS: dict[str, str] = {
    "--port": "port",
    "--host": "runtime (the preset listens on 0.0.0.0)",
    "--model": "model",
    "--model-path": "model",
    "--served-model-name": "name (or model.huggingface.modelId)",
    "--tensor-parallel-size": "resources.gpus",
    "-tp": "resources.gpus",
    "--tp": "resources.gpus",
    "--tp-size": "resources.gpus",
}
TGI_PRESET_ENV: dict[str, str] = {"PORT": "port", "NUM_SHARD": "resources.gpus", "MODEL_ID": "model",
                                  "HF_MODEL_ID": "model"}


def preset_flag(arg: str) -> str | None:
    """The preset flag ``arg`` repeats (``--port`` and ``--port=9000`` both give ``--port``), or None."""
    flag = arg.split("=", 1)[0]
    return flag if flag in PRESET_FLAGS else None


# --- specOverrides: the spec paths the library writes or models, each with the config key to use instead -----------
_COMMON_PATHS: dict[str, str] = {
    "replicas": "replicas",
    "loadBalancer": "loadBalancer (or healthCheckPath)",
    "autoScalingSpec": "autoScalingSpec",
    "intelligentRoutingSpec": "intelligentRoutingSpec",
    "kvCacheSpec": "kvCacheSpec",
    "metrics": "metrics",
    "maxDeployTimeInSeconds": "maxDeployTimeInSeconds",
    "modelCacheConfig.weightsCache": "weightCache",
    "modelCacheConfig.imageCache": "imageCache",
    "dataCapture": "dataCapture",
    "tlsConfig": "domainName (and the top-level domain section)",
    "dnsConfig": "domainName (and the top-level domain section)",
    "inferenceGateway": "inferenceGateway",
}
MODELLED_SPEC_PATHS: dict[str, dict[str, str]] = {
    "InferenceEndpointConfig": {
        **_COMMON_PATHS,
        "modelName": "name",
        "endpointName": "sagemakerEndpointName",
        "instanceType": "instanceType",
        "instanceTypes": "instanceTypes",
        "nodeAffinity": "nodeAffinity",
        "InitialReplicaCount": "replicas (InitialReplicaCount has no effect since v3.2)",
        "invocationEndpoint": "invocationEndpoint",
        "modelSourceConfig": "model",
        "worker.image": "image (or runtime)",
        "worker.command": "command",
        "worker.args": "args",
        "worker.environmentVariables": "env",
        "worker.workingDir": "workingDir",
        "worker.modelInvocationPort": "port / portName",
        "worker.modelVolumeMount": "weightCache",
        "worker.resources": "resources",
        "worker.probes": "probes",
        "worker.requestLimits": "requestLimits",
        "pdSpec": "pdSpec",
        "tags": "tags",
        "modelVersion": "modelVersion",
        "kubernetes.serviceAccountName": "weightCache (the library names the service account)",
        "kubernetes.volumes": "weightCache",
        "kubernetes.initContainers": "weightCache",
        "kubernetes.schedulerName": "schedulerName",
        "kubernetes.podTemplateAnnotations": "podTemplateAnnotations",
    },
    "JumpStartModel": {
        **_COMMON_PATHS,
        "model.modelId": "model.jumpstart.modelId",
        "model.acceptEula": "model.jumpstart.acceptEula",
        "model.modelHubName": "model.jumpstart.modelHubName",
        "model.modelVersion": "model.jumpstart.modelVersion",
        "model.additionalConfigs": "model.jumpstart.additionalConfigs",
        "model.gatedModelDownloadRole": "model.jumpstart.gatedModelDownloadRole",
        "server.instanceType": "instanceType",
        "server.acceleratorPartitionType": "acceleratorPartitionType",
        "server.executionRole": "executionRole",
        "server.validations": "acceleratorPartitionValidation",
        "sageMakerEndpoint": "sagemakerEndpointName",
        "environmentVariables": "env",
    },
}


Path = tuple[str, ...]


def override_leaves(patch: dict, prefix: Path = ()) -> list[Path]:
    """The paths a merge patch sets (RFC 7386: an object recurses; anything else, arrays and null included,
    replaces the value at its path). Paths are tuples: keys may contain dots (annotation keys)."""
    out: list[Path] = []
    for key, value in patch.items():
        path = prefix + (str(key),)
        if isinstance(value, dict) and value:
            out += override_leaves(value, path)
        else:
            out.append(path)
    return out


def dotted(path: Path) -> str:
    return ".".join(path)


def _conflicts(patch: dict, modelled: dict[str, str]) -> list[tuple[Path, str]]:
    """(patch path, config key to use instead) for every patch path that equals, lies inside or contains a path in
    ``modelled`` (the first such path in ``modelled``'s order). Each patch path costs its depth, not ``modelled``'s
    size: a patch of tens of thousands of paths is checked in linear time."""
    keys = list(modelled.values())
    exact: dict[Path, int] = {}  # a modelled path -> its index
    under: dict[Path, int] = {}  # every prefix of a modelled path (the path itself too) -> the first such path's index
    for i, path in enumerate(modelled):
        parts = tuple(path.split("."))
        exact.setdefault(parts, i)
        for n in range(1, len(parts) + 1):
            under.setdefault(parts[:n], i)
    out: list[tuple[Path, str]] = []
    for leaf in override_leaves(patch):
        found = [i for i in (under.get(leaf), *(exact.get(leaf[:n]) for n in range(1, len(leaf)))) if i is not None]
        if found:
            out.append((leaf, keys[min(found)]))
    return out


def override_conflicts(patch: dict, kind: str) -> list[tuple[Path, str]]:
    """Conflicts of a ``specOverrides`` patch with the spec paths the library writes or models for ``kind``. A later
    operator's field whose depth is not published (``tolerations``, ``lmcache``) is not one of them, wherever it
    lies: the library writes none of it (its version is checked instead)."""
    return [(leaf, key) for leaf, key in _conflicts(patch, MODELLED_SPEC_PATHS[kind]) if later_field(leaf) is None]


def _copy_json(value: Any) -> Any:
    """A copy of the objects and arrays of ``value``; any other value (a string, a number, or an opaque object such as
    a synth-time token, which must not be deep-copied) is kept as it is."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


# --- specOverrides per operator version --------------------------------------------------------------------------
# The library models every spec field of the CRDs it validates (v3.2, v3.3): a test walks each version's CRD and
# finds no field outside MODELLED_SPEC_PATHS. The v3.6 fields with a published path are modelled too (their versions
# are in facts.operator.FIELDS_SINCE). So a specOverrides path that is not a modelled one is a field of a later
# operator whose path is not published, or a mistake. Those later fields, by version, each with its source (their
# CRD text is not published; the hyperpod-inference-operator chart's PRs in aws/sagemaker-hyperpod-cli and the
# release notes name them), are allowed from their version on:
@dataclass(frozen=True)
class LaterField:
    name: str  # the field's name, as the source gives it
    version: str  # the first operator version with it
    source: str
    path: str | None = None  # the spec path, when the source gives it (None: matched by name at any depth)


LATER_FIELDS: tuple[LaterField, ...] = (
    LaterField("metricsSidecarResources", "v3.4", "operator v3.4 release notes (add-on v1.5.0-eksbuild.1)"),
    LaterField("metricsCollectorResources", "v3.4", "operator v3.4 release notes (add-on v1.5.0-eksbuild.1)"),
    LaterField("s3UploaderResources", "v3.4", "operator v3.4 release notes (add-on v1.5.0-eksbuild.1)"),
    # v3.5's weights-cache node-affinity field lies under modelCacheConfig.weightsCache, which the library writes
    # (weightCache); its name is not published (chart 2.5.0, aws/sagemaker-hyperpod-cli PR #455), so no override
    # can name it.
    LaterField("tolerations", "v3.7", "chart 2.7.0, aws/sagemaker-hyperpod-cli PRs #464 and #466"),
    # v3.7's LMCache mode (InProcess | MultiProcess): the PR names it lmcache.mode, at a depth it does not give.
    LaterField("lmcache", "v3.7", "chart 2.7.0, aws/sagemaker-hyperpod-cli PR #464"),
)


def lists_named(name: str, patch: Any, path: Path = ()) -> list[tuple[Path, list]]:
    """Every list under the key ``name`` in a merge patch, at any depth (a later field's path may not be published),
    with its path."""
    out: list[tuple[Path, list]] = []
    if isinstance(patch, dict):
        for key, sub in patch.items():
            if key == name and isinstance(sub, list):
                out.append(((*path, key), sub))
            else:
                out += lists_named(name, sub, (*path, str(key)))
    return out


def later_field(path: Path) -> LaterField | None:
    """The later operator's field a specOverrides path sets (the path is the field or lies inside it), or None."""
    for f in LATER_FIELDS:
        if f.path is not None:
            parts = tuple(f.path.split("."))
            if path[:len(parts)] == parts:
                return f
        elif f.name in path:
            return f
    return None


def known_spec_fields(kind: str) -> list[str]:
    """Every spec path a known operator version has for ``kind`` (what "did you mean" compares with)."""
    later = [f.path or f.name for f in LATER_FIELDS]
    return sorted({*MODELLED_SPEC_PATHS[kind], *later})


def nearest_spec_field(path: Path, kind: str) -> str | None:
    """The known spec field closest to a mistyped override path (``tolerationz`` -> ``tolerations``)."""
    dotted_path = dotted(path)
    fields = known_spec_fields(kind)
    candidates = [*fields, *{f.rsplit(".", 1)[-1] for f in fields}]
    for probe in (dotted_path, path[0], path[-1]):
        match = difflib.get_close_matches(probe, candidates, n=1, cutoff=0.75)
        if match:
            return match[0]
    return None


#: Unknown keys (or ``specOverrides`` paths) of one mapping the config's errors list one by one, each with the nearest
#: field name; the rest are counted in one line ("and 23,990 more"), so the work and the message stay bounded.
MAX_UNKNOWN_LISTED = 10


def override_version_problems(patch: dict, kind: str, version: str) -> list[tuple[Path, str]]:
    """Problems of a ``specOverrides`` patch's paths that the library does not write (see :func:`override_conflicts`
    for those) against operator ``version``: a later operator's field names that version; anything else is in no
    known version's CRD, with the nearest known field. The first :data:`MAX_UNKNOWN_LISTED` are listed; the rest are
    counted in one problem at the patch's root (path ``()``)."""
    written = {leaf for leaf, _ in override_conflicts(patch, kind)}
    out: list[tuple[Path, str]] = []
    more = 0
    for leaf in override_leaves(patch):
        if leaf in written:
            continue
        if len(out) >= MAX_UNKNOWN_LISTED:
            more += 1
            continue
        later = later_field(leaf)
        if later is not None:
            if Version(version) < Version(later.version):
                out.append((leaf, f"spec.{dotted(leaf)} needs operator.version {later.version} or later (have "
                                  f"{version}; {later.name} comes with operator {later.version}: {later.source})"))
            continue
        guess = nearest_spec_field(leaf, kind)
        hint = f"; did you mean {guess}?" if guess else ""
        out.append((leaf, f"spec.{dotted(leaf)} is in no known operator version's {kind} CRD{hint}"))
    if more:
        out.append(((), f"and {more:,} more paths not in operator {version}'s {kind} CRD"))
    return out


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 section 2: objects merge recursively, ``null`` deletes, anything else (arrays too) replaces.
    Returns a new value; neither input is changed (their objects and arrays are copied, other values are shared)."""
    if not isinstance(patch, dict):
        return _copy_json(patch)
    result = _copy_json(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --- the operator add-on's configurationValues ------------------------------------------------------------------
# Keys the library sets (constructs/operator.py OperatorAddon.configuration), with the config key to use instead.
ADDON_CONFIGURATION_PATHS: dict[str, str] = {
    "executionRoleArn": "operator.executionRoleArn (install: existing) or the role the stack creates",
    "tlsCertificateS3Bucket": "operator.tlsBucketName",
    "hyperpodClusterArn": "cluster.hyperpodClusterArn",
    "enableCustomServiceAccounts": "weightCache.mode: daemonset (turns it on when an endpoint needs it)",
    "jumpstartGatedModelDownloadRoleArn": "the gated-model role the stack creates",
    "alb.enabled": "nothing (the operator needs its ALB controller)",
    "alb.serviceAccount": "operator.albControllerRoleArn",
    "keda.enabled": "nothing (autoscaling needs KEDA)",
    "keda.auth": "operator.kedaRoleArn",
}


def addon_override_conflicts(patch: dict) -> list[tuple[Path, str]]:
    """Conflicts of an ``addonConfigurationOverrides`` patch with the keys the library sets."""
    return _conflicts(patch, ADDON_CONFIGURATION_PATHS)
