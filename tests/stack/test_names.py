"""Two stacks in one account and Region, and two HyperPodInference constructs in one stack, never choose the same
physical name (buckets, roles, key aliases, the NVMe agent's ConfigMap)."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk

from hyperpod_inference import HyperPodInference, HyperPodInferenceStack, load_config, parse_config
from hyperpod_inference.charts.agent_bundle import AGENT_BUNDLE
from tests.synth_helpers import DEFAULT_CONFIG

NAME_PROPERTIES = ("BucketName", "RoleName", "AliasName", "FunctionName")


def chosen_names(template: dict[str, Any]) -> list[str]:
    """Physical names that must be unique per account and Region (Glue tables and named queries are unique per
    database or workgroup, which are in here)."""
    out = []
    for res in template["Resources"].values():
        props = res.get("Properties", {})
        out += [props[p] for p in NAME_PROPERTIES if isinstance(props.get(p), str)]
        if res["Type"] == "AWS::Athena::WorkGroup":
            out.append(props["Name"])
        if res["Type"] == "AWS::Glue::Database":
            out.append(props["DatabaseInput"]["Name"])
    return out


def agent_configmaps(inference: HyperPodInference) -> set[str]:
    return {o["metadata"]["name"] for objs in inference.manifest_documents().values() for o in objs
            if o["kind"] == "ConfigMap" and AGENT_BUNDLE in (o.get("binaryData") or {})}


def test_two_stacks_in_one_account_and_region_choose_different_names() -> None:
    # GIVEN the default config deployed twice, as stacks A and B
    app = cdk.App()
    config = load_config(DEFAULT_CONFIG)
    a = HyperPodInferenceStack(app, "TeamA", config=config)
    b = HyperPodInferenceStack(app, "TeamB", config=config)
    assembly = app.synth()
    names_a = chosen_names(assembly.get_stack_by_name("TeamA").template)
    names_b = chosen_names(assembly.get_stack_by_name("TeamB").template)
    # THEN every name either chooses is its own (the retained buckets and the key alias included)
    assert names_a and not set(names_a) & set(names_b), set(names_a) & set(names_b)
    assert any(n.startswith("hyperpod-tls-teama-") for n in names_a)
    # AND the agent's code ConfigMaps differ (two stacks never delete each other's)
    assert agent_configmaps(a.inference) and not agent_configmaps(a.inference) & agent_configmaps(b.inference)


def test_two_constructs_in_one_stack_choose_different_names() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Platform", env=cdk.Environment(account="111122223333", region="us-west-2"))
    data = json.loads(load_config(DEFAULT_CONFIG).model_dump_json(by_alias=True, exclude_none=True))
    data["manifests"] = {"delivery": "files"}
    data["domain"] = {**data["domain"], "hostedZoneId": "Z0123456789ABCDEFGHIJ",
                      "certificateArn": "arn:aws:acm:us-west-2:111122223333:certificate/0a1b2c3d-0000-1111-2222-3333"}
    for ep in data["endpoints"]:
        ep.pop("verify", None)
    config = parse_config(data)
    HyperPodInference(stack, "Blue", config=config)
    HyperPodInference(stack, "Green", config=config)
    names = chosen_names(app.synth().get_stack_by_name("Platform").template)
    assert len(names) == len(set(names)), sorted(names)
