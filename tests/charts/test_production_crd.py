"""Generated from the config schema and the operator CRDs: every production field the config models (``x-crd-path``)
lands at exactly its CRD path, each enum / pattern / range violation is refused with the config path, and the
config's enum / bounds / pattern are the CRD's or stricter. Every resource built here validates strictly against
the v3.3 CRD (and v3.2 where the field exists there)."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from hyperpod_inference.charts.endpoint import EndpointWiring, SecretRef, build_custom_resource
from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.config.models import IEC_ONLY, JSM_ONLY, Endpoint
from hyperpod_inference.facts import operator, rules
from hyperpod_inference.facts import production as facts
from tests.k8s_validation import _crd_schemas, crd_errors, crd_root, require_crds
from tests.synth_helpers import DEFAULT_CONFIG

BASE = yaml.safe_load(DEFAULT_CONFIG.read_text())
BASE["endpoints"][0].pop("autoScalingSpec")  # the default config's own trigger: each test sets what it tests
WIRING = EndpointWiring(region="us-west-2", capture_s3_uri="s3://cap-bucket/data-capture",
                        capture_kms_key_id="arn:aws:kms:us-west-2:111122223333:alias/cap",
                        tls_output_s3_uri="s3://hyperpod-tls-111122223333-us-west-2",
                        certificate_arn="arn:aws:acm:us-west-2:111122223333:certificate/0a1b2c3d-0000",
                        hosted_zone_id="Z0123ABC", token_secret=SecretRef("hf-token", "token"))
IEC, JSM = "InferenceEndpointConfig", "JumpStartModel"
KIND_FILE = {IEC: "inferenceendpointconfigs", JSM: "jumpstartmodels"}

# A valid example for each pattern the production fields use (the CRD's pattern must accept it too).
PATTERN_SAMPLES = {
    facts.AMP_WORKSPACE_URL: "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-0123abcd-4567",
    facts.METRICS_PATH: "/metrics",
    facts.HEALTH_CHECK_PATH: "/health",
    facts.MIG_PROFILE: "mig-1g.10gb",
    facts.JUMPSTART_MODEL_VERSION: "1.2.3",
    facts.JSM_ROLE_ARN: "arn:aws:iam::111122223333:role/jumpstart-role",
    facts.LABEL_KEY: "topology.kubernetes.io/zone",
    r"^ml\.[a-z0-9-]+\.[a-z0-9]+$": "ml.g5.8xlarge",
    r"^/\S*$": "/health",
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": "http",
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": "my-scheduler",
    r"^[-._a-zA-Z0-9]+$": "token",
    r"^/[^\0]*$": "/workspace",
    rules.S3_BUCKET_NAME: "my-models",
    r"^fs-[0-9a-f]{8,17}$": "fs-0123456789abcdef0",
    facts.JSM_MODEL_ID: "meta-textgeneration-llama-3-8b",
    r"^[a-zA-Z0-9_.-]+/[a-zA-Z0-9_.-]+$": "Qwen/Qwen2.5-7B-Instruct",
    r"^[0-9a-f]{40}$": "0123456789abcdef0123456789abcdef01234567",
    r"^[A-Za-z0-9!_.*'()/-]*$": "llama/",
    r"^[a-z]{2}(-[a-z]+)+-[0-9]$": "us-east-2",
    r"^[A-Za-z0-9._/-]+$": "v1/chat/completions",
}
# Strings a CRD pattern might accept: the config's pattern must accept none the CRD's refuses.
PATTERN_CORPUS = list(PATTERN_SAMPLES.values()) + [
    "", " ", "redis", "Redis", "x", "1x2y3", "1.2.3.4", "mig-", "mig-1g.5gb ", "/", "//", "/a b", "http", "grpc",
    "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1/extra", "arn:aws:iam::1:role/x", "ml.", "ml.x.y",
    "arn:aws-cn:iam::111122223333:role/r", "a/b/c", "-a", "a-", "A", "/metrics?x=1",
]


# --------------------------------------------------------------------------------------------- the schema walk
@dataclass(frozen=True)
class Leaf:
    config_path: tuple[str | int, ...]  # from the endpoint
    crd_path: tuple[str | int, ...]  # from spec; ints are array indexes
    schema: dict  # the config's JSON Schema of the value (null branch removed)
    required_path: tuple[tuple[tuple[str | int, ...], dict], ...]  # (config path, object schema) of each parent

    @property
    def yaml_path(self) -> str:
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.config_path).lstrip(".")

    @property
    def crd_dotted(self) -> str:
        return "spec." + ".".join("[]" if isinstance(p, int) else p for p in self.crd_path).replace(".[]", "[]")

    @property
    def kinds(self) -> tuple[str, ...]:
        top = self.config_path[0]
        if top in JSM_ONLY or self.config_path[:2] == ("model", "jumpstart"):
            return (JSM,)
        if top in IEC_ONLY or top == "model":
            return (IEC,)
        return (IEC, JSM) if crd_node(JSM, self.crd_path, "v3.3") is not None else (IEC,)


SCHEMA = Endpoint.model_json_schema(by_alias=True)
DEFS = SCHEMA["$defs"]


def _resolve(s: dict) -> dict:
    if "anyOf" in s:
        branches = [b for b in s["anyOf"] if b.get("type") != "null"]
        if len(branches) == 1:
            merged = {k: v for k, v in s.items() if k != "anyOf"}
            return {**_resolve(branches[0]), **merged}
    if "$ref" in s:
        return {**DEFS[s["$ref"].split("/")[-1]], **{k: v for k, v in s.items() if k != "$ref"}}
    return s


def _walk(schema: dict, cpath: tuple, crd: tuple | None, parents: tuple) -> list[Leaf]:
    out: list[Leaf] = []
    for key, raw in schema.get("properties", {}).items():
        sub = _resolve(raw)
        mapped = raw.get("x-crd-path")
        if mapped is None and crd is not None:
            raise AssertionError(f"{cpath + (key,)} has no x-crd-path inside a mapped object")
        here = None
        if mapped is not None:
            parts = tuple(mapped.split("."))
            here = parts[1:] if parts[0] == "spec" else crd + parts  # type: ignore[operator]
        out += _descend(sub, cpath + (key,), here, parents + ((cpath, schema),))
    return out


def _descend(sub: dict, cpath: tuple, crd: tuple | None, parents: tuple) -> list[Leaf]:
    if sub.get("type") == "object" and "properties" in sub:
        return _walk(sub, cpath, crd, parents)
    if sub.get("type") == "array":
        item = _resolve(sub["items"])
        if item.get("type") == "object" and "properties" in item:
            return _walk(item, cpath + (0,), None if crd is None else crd + (0,), parents)
    if crd is None:
        return []
    return [Leaf(cpath, crd, sub, parents)]


def _since(leaf: Leaf) -> str | None:
    """The operator version that adds the leaf's CRD path (itself or an object above it), if FIELDS_SINCE dates it."""
    return next((v for f, v in operator.FIELDS_SINCE.items()
                 if leaf.crd_dotted == f or leaf.crd_dotted.startswith(f + ".")), None)


ALL_LEAVES = _walk(SCHEMA, (), None, ())
#: Fields of the versions whose CRD text is not public (v3.6's inferenceGateway, podTemplateAnnotations): sourced from
#: AWS's documentation, so no CRD checks them; they are tested on the resource below.
DOCS_ONLY = [leaf for leaf in ALL_LEAVES if _since(leaf) not in (None, *operator.VALIDATED_OPERATOR_VERSIONS)]
LEAVES = [leaf for leaf in ALL_LEAVES if leaf not in DOCS_ONLY]
IDS = [leaf.yaml_path for leaf in LEAVES]


def crd_node(kind: str, crd_path: tuple, version: str) -> dict | None:
    root = crd_root()
    if root is None:
        return None
    schemas = _crd_schemas(str(root), version)
    node = schemas[("inference.sagemaker.aws.amazon.com/v1", kind)]["properties"]["spec"]
    for p in crd_path:
        node = node.get("items") if isinstance(p, int) else (node.get("properties") or {}).get(p)
        if node is None:
            return None
    return node


# ------------------------------------------------------------------------------------------------- valid values
def valid_value(leaf: Leaf) -> list[Any]:
    s = leaf.schema
    if leaf.config_path[-1] == "operator":
        return ["In", "NotIn"]  # the others take other values (covered in test_production_config)
    if leaf.config_path[0] == "probes" and leaf.config_path[-1] == "port":
        return [8000]  # a probe must reach the port the server serves (the vLLM preset's; test_cluster_refusals)
    if leaf.config_path[0] == "nodeAffinity" and leaf.config_path[-1] == "values":
        return [["ml.g5.8xlarge"]]  # instance-type values must be known ml.* types (test_cluster_refusals)
    if "enum" in s:
        return list(s["enum"])
    if "const" in s:
        return [s["const"]]
    kind = s.get("type")
    if "anyOf" in s:
        return [valid_value(Leaf(leaf.config_path, leaf.crd_path, _resolve(s["anyOf"][0]), leaf.required_path))[0]]
    if kind == "boolean":
        return [True, False]
    if kind == "integer":
        lo = s.get("minimum", 1)
        return [max(lo, 1)]
    if kind == "number":
        return [1.5]
    if kind == "string":
        return [PATTERN_SAMPLES[s["pattern"]]] if "pattern" in s else ["abc"]
    if kind == "array":
        return [valid_value(Leaf(leaf.config_path + (0,), leaf.crd_path + (0,), _resolve(s["items"]),
                                 leaf.required_path))[:1]]
    if kind == "object":  # a map (requests, limits, nodeSelector)
        key = "cpu" if "Requests" in s.get("title", "") or "Limits" in s.get("title", "") else "topology.kubernetes.io/zone"
        return [{key: "1" if key == "cpu" else "us-west-2a"}]
    raise AssertionError(f"no valid value for {leaf.yaml_path}: {s}")


def minimal(schema: dict, cpath: tuple) -> dict:
    """An object with only its required fields, each valid."""
    out: dict[str, Any] = {}
    for key in schema.get("required", []):
        sub = _resolve(schema["properties"][key])
        if sub.get("type") == "object" and "properties" in sub:
            out[key] = minimal(sub, cpath + (key,))
        elif sub.get("type") == "array" and _resolve(sub["items"]).get("type") == "object":
            out[key] = [minimal(_resolve(sub["items"]), cpath + (key, 0))]
        else:
            out[key] = valid_value(Leaf(cpath + (key,), (), sub, ()))[0]
    return FIXUPS.get(schema.get("title", ""), lambda d: d)(out)


FIXUPS = {
    "Probe": lambda d: {**d, "httpGet": {"port": 8000}},
    "NodeSelectorRequirement": lambda d: {**d, "operator": "In", "values": ["us-west-2a"]},
    "NodeSelectorTerm": lambda d: {**d, "matchExpressions": [{"key": "node.kubernetes.io/instance-type",
                                                              "operator": "In", "values": ["ml.g5.8xlarge"]}]},
    "EnvVarSource": lambda d: {**d, "secretKeyRef": {"name": "s", "key": "k"}},
}


def base_endpoint(kind: str, leaf: Leaf) -> dict:
    ep = copy.deepcopy(BASE["endpoints"][0])
    ep["weightCache"] = {"mode": "off"}
    top = leaf.config_path[0]
    if kind == JSM:
        ep.update(kind=JSM, model={"jumpstart": {"modelId": "meta-textgeneration-llama-3-8b"}})
        ep.pop("runtime")
    elif top == "model":
        ep["model"] = {}
    elif top == "command":
        ep.update(runtime="custom", image="my.registry/server:1", port=8080)
    if top in ("instanceTypes", "nodeAffinity"):
        ep.pop("instanceType")
        if top == "nodeAffinity":
            ep["resources"] = {"gpus": 1}
    return ep


def set_leaf(ep: dict, leaf: Leaf, value: Any) -> dict:
    """``ep`` with ``value`` at the leaf's config path, every parent object created with its required fields."""
    node: Any = ep
    parents = dict(leaf.required_path)
    for depth, key in enumerate(leaf.config_path[:-1]):
        nxt = leaf.config_path[depth + 1]
        schema = parents.get(leaf.config_path[:depth + 1])
        if isinstance(key, int):
            while len(node) <= key:
                node.append(minimal(schema, leaf.config_path[:depth + 1]) if schema else {})
            node = node[key]
            continue
        if key not in node or node[key] is None:
            if isinstance(nxt, int):
                node[key] = []
            else:
                node[key] = minimal(schema, leaf.config_path[:depth + 1]) if schema else {}
        node = node[key]
    node[leaf.config_path[-1]] = value
    # a probe takes one handler: the one being set replaces the minimal httpGet
    for probe_key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = (ep.get("probes") or {}).get(probe_key)
        if probe and len({"exec", "httpGet", "tcpSocket", "grpc"} & set(probe)) > 1:
            probe.pop("httpGet")
    kv = ep.get("kvCacheSpec") or {}
    if kv.get("enableL2Cache") and "l2CacheSpec" not in kv:
        kv["l2CacheSpec"] = {"l2CacheBackend": "tieredstorage"}
    return ep


def parse(ep: dict):
    data = copy.deepcopy(BASE)
    data["endpoints"] = [ep]
    return parse_config(data).endpoints[0]


def at(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


CASES = [(leaf, kind) for leaf in LEAVES for kind in leaf.kinds]


def test_the_walk_finds_every_production_field():
    # GIVEN the config schema WHEN walked THEN it reaches the fields issue #19 lists (a broken walk cannot pass)
    found = {leaf.crd_dotted for leaf in LEAVES}
    for path in ("spec.autoScalingSpec.cloudWatchTriggerList[].dimensions[].name",
                 "spec.intelligentRoutingSpec.autoScalingSpec.prometheusTrigger.serverAddress",
                 "spec.pdSpec.autoScalingSpec.decodingAutoScaling.maxReplicaCount",
                 "spec.worker.probes.startupProbe.httpGet.port", "spec.worker.requestLimits.overflowStatusCode",
                 "spec.loadBalancer.idleTimeoutSeconds", "spec.modelCacheConfig.imageCache.enabled",
                 "spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[]"
                 ".matchExpressions[].operator", "spec.server.validations.acceleratorPartitionValidation",
                 "spec.model.modelVersion", "spec.modelSourceConfig.prefetchEnabled", "spec.kubernetes.schedulerName"):
        assert path in found, path
    assert len(LEAVES) > 150


@pytest.mark.parametrize(("leaf", "kind"), CASES, ids=[f"{kind[:3]}:{leaf.yaml_path}" for leaf, kind in CASES])
def test_a_valid_value_lands_at_exactly_its_crd_path_and_validates(leaf, kind):
    # GIVEN the CRD has the field WHEN the config sets it THEN the resource carries it at that path, strictly valid
    assert crd_node(kind, leaf.crd_path, "v3.3") is not None or crd_root() is None, f"{leaf.crd_dotted} not in {kind}"
    for value in valid_value(leaf):
        ep = parse(set_leaf(base_endpoint(kind, leaf), leaf, copy.deepcopy(value)))
        cr = build_custom_resource(ep, WIRING)
        landed = at(cr["spec"], leaf.crd_path)
        if isinstance(value, dict):
            assert value.items() <= landed.items(), (leaf.crd_dotted, landed)
        else:
            assert landed == value, (leaf.crd_dotted, landed)
        assert crd_errors(cr, "v3.3") == []
        if operator.has_field("v3.2", "spec." + ".".join(p for p in leaf.crd_path[:2] if isinstance(p, str))) and \
                operator.has_field("v3.2", leaf.crd_dotted):
            assert crd_errors(cr, "v3.2") == []


def invalid_values(leaf: Leaf) -> list[tuple[str, Any]]:
    s = leaf.schema
    out: list[tuple[str, Any]] = []
    if "enum" in s:
        out.append(("enum", "not-one-of-them"))
    if "minimum" in s:
        out.append(("minimum", s["minimum"] - 1))
    if "maximum" in s:
        out.append(("maximum", s["maximum"] + 1))
    if "pattern" in s:
        out.append(("pattern", " bad value"))
    if "maxLength" in s and "pattern" not in s:
        out.append(("maxLength", "x" * (s["maxLength"] + 1)))
    return out


REFUSALS = [(leaf, rule, value) for leaf in LEAVES for rule, value in invalid_values(leaf)]


@pytest.mark.parametrize(("leaf", "rule", "value"), REFUSALS,
                         ids=[f"{leaf.yaml_path}:{rule}" for leaf, rule, _ in REFUSALS])
def test_each_enum_pattern_and_range_violation_is_refused_with_the_config_path(leaf, rule, value):
    # GIVEN an otherwise valid endpoint WHEN one field breaks its rule THEN the error names that field's path
    ep = set_leaf(base_endpoint(leaf.kinds[0], leaf), leaf, value)
    with pytest.raises(ConfigError) as err:
        parse(ep)
    paths = [p for p, _ in err.value.problems]
    assert any(p.startswith(f"endpoints[0].{leaf.yaml_path}") for p in paths), (rule, err.value.problems)


def _crd_anchored_match(pattern: str, text: str) -> bool:
    return re.search(pattern.replace("(?i)", ""), text, re.I if "(?i)" in pattern else 0) is not None


@pytest.mark.parametrize(("leaf", "kind"), CASES, ids=[f"{kind[:3]}:{leaf.yaml_path}" for leaf, kind in CASES])
def test_the_config_schema_is_the_crds_or_stricter(leaf, kind):
    # GIVEN the CRD's rule for the field WHEN compared with the config's JSON Schema THEN the config is no looser
    require_crds()
    crd = crd_node(kind, leaf.crd_path, "v3.3")
    assert crd is not None, f"{leaf.crd_dotted} not in {kind}"
    ours = leaf.schema
    if "enum" in crd:
        assert set(ours.get("enum", [])) <= set(crd["enum"]) and "enum" in ours
    for bound, tighter in (("minimum", max), ("minLength", max), ("minItems", max),
                           ("maximum", min), ("maxLength", min), ("maxItems", min)):
        if bound in crd:
            assert bound in ours, f"{bound} missing (CRD {crd[bound]})"
            assert tighter(ours[bound], crd[bound]) == ours[bound], (bound, ours[bound], crd[bound])
    if "pattern" in ours:
        assert ours["pattern"].startswith("^") and ours["pattern"].endswith("$"), "patterns are anchored"
    if "pattern" in crd:
        if "enum" in ours:
            assert all(_crd_anchored_match(crd["pattern"], v) for v in ours["enum"])
        else:
            assert "pattern" in ours, "the CRD has a pattern the config lacks"
            for text in PATTERN_CORPUS:
                if re.search(ours["pattern"], text):
                    assert _crd_anchored_match(crd["pattern"], text), f"{text!r} passes the config, not the CRD"
    if crd.get("type") in ("integer", "number", "boolean", "string", "array") and "anyOf" not in ours:
        expected = {"number": ("number", "integer")}.get(crd["type"], (crd["type"],))
        assert ours.get("type") in expected, (ours.get("type"), crd["type"])


@pytest.mark.parametrize("leaf", [leaf for leaf in LEAVES if operator.FIELDS_SINCE.get(leaf.crd_dotted) or any(
    leaf.crd_dotted.startswith(p) for p in operator.FIELDS_SINCE)], ids=lambda leaf: leaf.yaml_path)
def test_fields_newer_than_v3_2_are_absent_from_its_crd(leaf):
    # GIVEN the version table WHEN checked against the v3.2 CRD THEN a v3.3 field is really missing there
    require_crds()
    assert crd_node(IEC, leaf.crd_path, "v3.2") is None and crd_node(IEC, leaf.crd_path, "v3.3") is not None


def test_the_fields_sourced_from_docs_land_at_their_documented_path():
    # GIVEN the v3.6 fields (no public CRD) WHEN set on a v3.6 config THEN each lands at its documented path
    assert {leaf.crd_dotted for leaf in DOCS_ONLY} == {
        "spec.inferenceGateway.enabled", "spec.inferenceGateway.name", "spec.kubernetes.podTemplateAnnotations"}
    for leaf in DOCS_ONLY:
        for kind in ((IEC,) if leaf.config_path[0] in IEC_ONLY else (IEC, JSM)):
            value = valid_value(leaf)[0]
            data = copy.deepcopy(BASE)
            data["operator"] = {**data.get("operator", {}), "version": "v3.6"}
            data["endpoints"] = [set_leaf(base_endpoint(kind, leaf), leaf, copy.deepcopy(value))]
            cr = build_custom_resource(parse_config(data).endpoints[0], WIRING)
            assert at(cr["spec"], leaf.crd_path) == value, (kind, leaf.crd_dotted)
