"""An imported TLS bucket outside ``hyperpod-tls*``: the operator's certificates for this stack go under the stack's own
folder of it, every custom resource names that folder, and the execution role may write, read and delete only there."""

from __future__ import annotations

import json

import pytest

from tests.k8s_validation import crd_errors, require_crds
from tests.synth_helpers import FILES_CONFIG, load_yaml, synth_config

FOLDER = "hyperpod-inference/hyperpodinference"  # the files fixture's stack is HyperPodInference
URI = f"s3://my-certs/{FOLDER}/"


def _with_tls_bucket(name: str, **operator: str) -> dict:
    data = load_yaml(FILES_CONFIG)
    data["operator"].update({"tlsBucketName": name, **operator})
    return data


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    # GIVEN the files fixture (custom domains on two endpoints) with an imported TLS bucket named my-certs
    # WHEN it is synthesized (cdk-nag registered: an unacknowledged finding raises)
    return synth_config(_with_tls_bucket("my-certs"), tmp_path_factory.mktemp("tls-my-certs"))


def _tls_configs(synth) -> dict[str, dict]:
    return {cr["metadata"]["name"]: cr["spec"]["tlsConfig"] for cr in synth.custom_resources()
            if "tlsConfig" in cr["spec"]}


def _execution_role_statements(synth) -> list[dict]:
    role = synth.stack.get_logical_id(synth.stack.inference.execution_role.node.default_child)
    return [s for p in synth.resources("AWS::IAM::Policy").values() if {"Ref": role} in p["Properties"]["Roles"]
            for s in p["Properties"]["PolicyDocument"]["Statement"]]


def _arn(statement: dict) -> list[str]:
    """The statement's resources as text: a joined ARN with its tokens as ``<Ref:...>``, anything else as JSON."""
    resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    out = []
    for r in resources:
        if isinstance(r, dict) and "Fn::Join" in r:
            out.append("".join(p if isinstance(p, str) else f"<Ref:{p.get('Ref')}>" for p in r["Fn::Join"][1]))
        else:
            out.append(r if isinstance(r, str) else json.dumps(r))
    return out


def test_every_custom_resource_writes_its_certificate_under_the_stacks_folder(imported):
    # THEN each custom resource with a custom domain names s3://my-certs/<folder>/
    tls = _tls_configs(imported)
    assert set(tls) == {"qwen-chat", "llama-s3"}
    assert {name: t["tlsCertificateOutputS3Uri"] for name, t in tls.items()} == {"qwen-chat": URI, "llama-s3": URI}


def test_custom_resources_with_the_folder_validate_strictly_against_the_crds(imported):
    # THEN they validate against the CRDs of the fixture's operator version (unknown fields rejected, patterns kept)
    crs = [cr for cr in imported.custom_resources() if "tlsConfig" in cr["spec"]]
    assert len(crs) == 2
    for cr in crs:
        assert crd_errors(cr, "v3.3") == [], (cr["metadata"]["name"], crd_errors(cr, "v3.3"))


def test_the_execution_role_may_delete_write_and_read_only_in_the_stacks_folder(imported):
    # THEN every S3 object action on my-certs names exactly my-certs/<folder>/*; ListBucket stays on the bucket
    s3 = [s for s in _execution_role_statements(imported)
          if any("my-certs" in arn for arn in _arn(s))]
    by_actions = {json.dumps(s["Action"]): _arn(s) for s in s3}
    objects = [f"arn:<Ref:AWS::Partition>:s3:::my-certs/{FOLDER}/*"]
    assert by_actions == {
        '"s3:DeleteObject"': objects,
        '"s3:GetObject"': objects,
        '["s3:PutObject", "s3:PutObjectTagging"]': objects,
        '"s3:ListBucket"': ["arn:<Ref:AWS::Partition>:s3:::my-certs"],
    }


def test_the_addon_keeps_the_bucket_name(imported):
    # THEN the add-on's tlsCertificateS3Bucket is the bucket name it documents, without the folder
    (addon,) = [r for r in imported.resources("AWS::EKS::Addon").values()
                if r["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-inference"]
    values = addon["Properties"]["ConfigurationValues"]
    text = values if isinstance(values, str) else "".join(p for p in values["Fn::Join"][1] if isinstance(p, str))
    assert '"tlsCertificateS3Bucket":"my-certs"' in text.replace(" ", "")


def test_a_hyperpod_tls_bucket_keeps_its_uri_and_gets_no_grant(tmp_path):
    # GIVEN an imported bucket the managed policy covers  WHEN the stack is synthesized
    synth = synth_config(_with_tls_bucket("hyperpod-tls-x"), tmp_path, nag=False)
    # THEN the custom resources name the bucket as before (no folder) and the role gets no statement on it
    assert set(t["tlsCertificateOutputS3Uri"] for t in _tls_configs(synth).values()) == {"s3://hyperpod-tls-x"}
    assert not [s for s in _execution_role_statements(synth) if any("hyperpod-tls-x" in a for a in _arn(s))]


def test_the_operator_chart_defaults_to_the_stacks_folder(tmp_path):
    # GIVEN the operator installed as a chart with an imported bucket outside hyperpod-tls*
    crds = require_crds() / "v3.3"
    data = _with_tls_bucket("my-certs", install="chart", crdSource=str(crds))
    # WHEN the stack is synthesized
    synth = synth_config(data, tmp_path, nag=False)
    env = {e["name"]: e.get("value") for o in synth.manifests["operator"] if o["kind"] == "Deployment"
           for c in o["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
    # THEN the operator's default certificate output (a URI) is the stack's folder, where its grant lies
    assert env["TLS_CERTIFICATE_OUTPUT_S3URI"] == URI
