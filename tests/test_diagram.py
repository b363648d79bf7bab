"""tools/diagram.py: the .dot built from a synthesized cdk.out holds the IRSA and custom-resource edges (no rendering,
so no graphviz needed)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest

from hyperpod_inference.app import build

ROOT = Path(__file__).resolve().parents[1]
EDGE = re.compile(r'^\s*"([^"]+)" -> "([^"]+)" \[(.*)\];$', re.M)


def _load_tool():
    spec = importlib.util.spec_from_file_location("hyperpod_diagram", ROOT / "tools" / "diagram.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


diagram = _load_tool()


def _synth(outdir: Path, config: str) -> Path:
    app = cdk.App(outdir=str(outdir))
    stack = build(app, config, nag=False)
    app.synth()
    stack.write_manifests(str(outdir))
    return outdir


@pytest.fixture(scope="module")
def default_out(tmp_path_factory) -> Path:
    return _synth(tmp_path_factory.mktemp("cdk-default"), str(ROOT / "hyperpod.yaml"))


@pytest.fixture(scope="module")
def files_out(tmp_path_factory) -> Path:
    return _synth(tmp_path_factory.mktemp("cdk-files"), str(ROOT / "tests" / "fixtures" / "files.yaml"))


def _dot_edges(dot_text: str) -> dict[tuple[str, str], str]:
    """Visible edges of the .dot: (source id, destination id) -> attributes."""
    return {(m[0], m[1]): m[2] for m in EDGE.findall(dot_text) if "style=invis" not in m[2]}


def _ids(graph, name: str, caption_prefix: str = "") -> str:
    found = [n.id for n in graph.nodes.values() if n.name == name and n.caption.startswith(caption_prefix)]
    assert len(found) == 1, (name, caption_prefix, found)
    return found[0]


def test_default_stack_irsa_and_custom_resource_edges(default_out):
    graph = diagram.load_graph(default_out)
    dot = diagram.to_dot(graph)
    edges = _dot_edges(dot)

    execution_role = _ids(graph, "ExecutionRole", "IAM role")
    controller_sa = "k8s:hyperpod-inference-system/ServiceAccount/hyperpod-inference-controller-manager"
    assert (execution_role, controller_sa) in edges  # trust sub -> system:serviceaccount:<ns>:<name>
    assert "IRSA" in edges[(execution_role, controller_sa)]
    for role, sa in [("AlbControllerRole", "hyperpod-inference-system/ServiceAccount/aws-load-balancer-controller"),
                     ("KedaRole", "hyperpod-inference-system/ServiceAccount/keda-operator"),
                     ("S3CsiRole", "kube-system/ServiceAccount/s3-csi-driver-sa")]:
        assert (_ids(graph, role, "IAM role"), f"k8s:{sa}") in edges

    cr = "k8s:inference/InferenceEndpointConfig/qwen-chat"
    bucket = _ids(graph, "CaptureBucket", "S3 bucket")
    key = _ids(graph, "CaptureKey", "KMS key")
    zone = _ids(graph, "HostedZone", "Route 53")
    cert = _ids(graph, "Certificate", "ACM")
    assert 'label="s3Uri"' in edges[(cr, bucket)]
    assert 'label="kmsKeyId"' in edges[(cr, key)]          # alias ARN -> the key behind the alias
    assert 'label="hostedZoneId"' in edges[(cr, zone)]
    assert 'label="acmArn"' in edges[(cr, cert)]
    assert (cr, _ids(graph, "TlsBucket", "S3 bucket")) in edges

    # roles -> what their policy statements grant on
    for target in (bucket, key, zone, cert):
        assert (execution_role, target) in edges
    assert {("S3CsiRole", "CaptureBucket"), ("S3CsiRole", "CaptureKey")} <= graph.pairs("grant")

    # short labels: no CDK hash suffixes, no 40-character logical IDs
    names = [n.name for n in graph.nodes.values()]
    assert not [n for n in names if re.search(r"[0-9A-F]{8}$", n) or len(n) > 40], names
    assert "AWS (CloudFormation stack)" in dot and "subgraph cluster_ns_inference" in dot


def test_imported_resources_and_annotated_service_accounts(files_out):
    graph = diagram.load_graph(files_out)
    edges = _dot_edges(diagram.to_dot(graph))

    # ServiceAccount with eks.amazonaws.com/role-arn whose role trusts it: one two-way IRSA edge
    (role,) = [n.id for n in graph.nodes.values() if re.fullmatch(r"InferenceToken[0-9a-f]{8}ReaderRole", n.name)
               and n.caption.startswith("IAM role")]
    (sync,) = [n.id[len("k8s:inference/SecretStore/"):] for n in graph.nodes.values()
               if n.id.startswith("k8s:inference/SecretStore/")]
    sa = f"k8s:inference/ServiceAccount/{sync}-reader"
    assert "dir=both" in edges[(role, sa)]
    assert (f"k8s:inference/SecretStore/{sync}", sa) in edges
    secret = _ids(graph, "hf-token-AbCdEf", "Secrets Manager secret (imported)")
    assert (role, secret) in edges and (f"k8s:inference/ExternalSecret/{sync}", secret) in edges

    # imported zone / certificate (literal ids in the manifests and the policies) are one node each
    zone = _ids(graph, "Z0123456789ABCDEFGHIJ", "Route 53 hosted zone (imported)")
    cert = next(n.id for n in graph.nodes.values() if n.caption.startswith("ACM certificate (imported)"))
    for cr in ("k8s:inference/InferenceEndpointConfig/qwen-chat", "k8s:research/InferenceEndpointConfig/llama-s3"):
        assert (cr, zone) in edges and (cr, cert) in edges
    assert (_ids(graph, "ExecutionRole", "IAM role"), zone) in edges
    js = "k8s:research/JumpStartModel/llama-js"
    assert (js, _ids(graph, "CaptureBucket", "S3 bucket")) in edges
    assert (js, _ids(graph, "CaptureKey", "KMS key")) in edges


# ------------------------------------------------------------------------------------- the committed diagram
@pytest.fixture(scope="module")
def make_synth_out(tmp_path_factory) -> Path:
    """The default config synthesized as `make diagram` has it synthesized (cdk.json's context, manifests written)."""
    from tests.docs.helpers import tool

    return tool("resource_inventory").synth_default(tmp_path_factory.mktemp("cdk-make"))


def test_the_committed_dot_is_what_make_diagram_draws_today(make_synth_out):
    # GIVEN today's synth of hyperpod.yaml WHEN drawn THEN docs/architecture.dot is exactly that drawing
    committed = (ROOT / "docs" / "architecture.dot").read_text()
    assert diagram.to_dot(diagram.load_graph(make_synth_out)) == committed, "stale: run make diagram"


def test_the_committed_png_was_drawn_from_the_committed_dot():
    # GIVEN the PNG make diagram wrote THEN it names the digest of the .dot it was drawn from (Graphviz's bytes differ
    # between releases, so the pixels are not compared)
    png = (ROOT / "docs" / "architecture.png").read_bytes()
    assert diagram.png_dot_digest(png) == diagram.dot_digest((ROOT / "docs" / "architecture.dot").read_text()), \
        "stale: run make diagram"


def test_the_digest_stamp_reads_back_and_an_unstamped_png_has_none():
    # a 1x1 PNG: signature, IHDR, IDAT, IEND
    raw = b"\x89PNG\r\n\x1a\n" + diagram._chunk(b"IHDR", bytes.fromhex("00000001000000010800000000")) + \
        diagram._chunk(b"IDAT", bytes.fromhex("789c63000100000500010d0a2db4")) + diagram._chunk(b"IEND", b"")
    assert diagram.png_dot_digest(raw) is None
    stamped = diagram.stamp_png(raw, "digraph {}")
    assert diagram.png_dot_digest(stamped) == diagram.dot_digest("digraph {}")
    assert stamped.endswith(diagram._chunk(b"IEND", b""))


def test_capture_analytics_is_one_node_in_its_own_group(default_out):
    # GIVEN the default stack, whose capture analytics are 22 Athena and Glue resources
    graph = diagram.load_graph(default_out)
    analytics = [n for n in graph.nodes.values() if n.group == "analytics"]
    # THEN they are one node, counting each kind, pointing at the capture bucket; none is left loose
    assert [n.name for n in analytics] == ["CaptureAnalytics"]
    assert "9 named queries" in analytics[0].caption and "2 Glue tables" in analytics[0].caption
    assert ("CaptureAnalytics", "CaptureBucket") in graph.pairs("aws")
    assert not [n for n in graph.nodes.values() if n.caption.startswith(("Athena", "Glue"))]
