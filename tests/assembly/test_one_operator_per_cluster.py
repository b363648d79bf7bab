"""One operator per cluster within an app: a second stack or a second HyperPodInference that would install the
operator or its dependency add-ons on a cluster another construct installs onto is refused, naming the first and the
fix; on the first one's operator (``install: existing``), or on another cluster, it is not."""

from __future__ import annotations

import copy
from typing import Any

import aws_cdk as cdk
import pytest

from hyperpod_inference import HyperPodInference, HyperPodInferenceStack, load_config, parse_config
from tests.synth_helpers import DEFAULT_CONFIG


def _data() -> dict[str, Any]:
    data = load_config(DEFAULT_CONFIG).model_dump(by_alias=True, exclude_none=True)
    data["namespaces"] = []
    return data


def _existing(data: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(data)
    data["endpoints"][0].update(name="other-chat", sagemakerEndpointName="other-chat", domainName="o.example.com")
    data["operator"] = {"install": "existing", "dependencies": "existing", "version": "v3.3",
                        "executionRoleArn": "arn:aws:iam::111122223333:role/SageMakerHyperPodInference-TeamA"}
    return data


def test_a_second_stack_installing_the_operator_on_the_same_cluster_is_refused_naming_the_first_and_the_fix():
    # GIVEN stack TeamA installing the operator (add-on and dependency add-ons) on my-hp-eks
    app = cdk.App()
    HyperPodInferenceStack(app, "TeamA", config=parse_config(_data()))
    # WHEN stack TeamB of the same app would install them on the same cluster (also as the Helm chart)
    for operator in ({"install": "addon", "version": "v3.3"},
                     {"install": "chart", "version": "v3.3", "dependencies": "existing", "crdSource": "."}):
        data = _data()
        data["operator"] = operator
        # THEN it is refused, naming the cluster, the first construct and the fix
        with pytest.raises(ValueError, match=r"TeamB\w+/Default: cluster my-hp-eks \(111122223333, us-west-2\) already "
                                             r"gets the operator from TeamA/Default.*operator\.install: existing.*"
                                             r"operator\.dependencies: existing"):
            HyperPodInferenceStack(app, f"TeamB{operator['install']}", config=parse_config(data))


def test_a_second_construct_in_one_stack_installing_the_operator_is_refused():
    app = cdk.App()
    stack = cdk.Stack(app, "Platform", env=cdk.Environment(account="111122223333", region="us-west-2"))
    data = _data()
    data["manifests"] = {"delivery": "files"}
    data["endpoints"] = []
    data.pop("domain")
    HyperPodInference(stack, "Blue", config=parse_config(data))
    with pytest.raises(ValueError, match=r"Platform/Green: .* already gets the operator from Platform/Blue"):
        HyperPodInference(stack, "Green", config=parse_config(data))


def test_a_second_stack_on_the_first_ones_operator_or_on_another_cluster_is_fine():
    # GIVEN TeamA installing the operator on my-hp-eks
    app = cdk.App()
    HyperPodInferenceStack(app, "TeamA", config=parse_config(_data()))
    # WHEN TeamB uses the existing operator there, and TeamC installs one on another cluster
    b = HyperPodInferenceStack(app, "TeamB", config=parse_config(_existing(_data())))
    other = _data()
    other["cluster"]["eksClusterName"] = "other-eks"
    other["cluster"]["hyperpodClusterArn"] = "arn:aws:sagemaker:us-west-2:111122223333:cluster/zzzz1234efgh"
    c = HyperPodInferenceStack(app, "TeamC", config=parse_config(other))
    # THEN both are built: TeamB adds no add-on, TeamC its own
    assembly = app.synth()
    addons = {s: [r for r in assembly.get_stack_by_name(s).template["Resources"].values()
                  if r["Type"] == "AWS::EKS::Addon"] for s in ("TeamB", "TeamC")}
    assert b.inference and c.inference and addons["TeamB"] == [] and addons["TeamC"]
