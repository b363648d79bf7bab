"""The good configs the docs show (and ``hyperpod.yaml``) fail no model check: ``doctor --only model`` against the
Hub on loopback holding the commits they pin, and moto S3 holding the weights their S3 models name in the config's
region. A docs example that would fail on a real account (a commit the model does not have, weights that do not fit)
fails this test."""

from __future__ import annotations

import copy
from pathlib import Path

import boto3
import pytest
import yaml

from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.config.models import HyperPodConfig
from tests.fake_aws import REGION, Account
from tests.fakes import hub_repos as repos
from tests.ops.conftest import run_doctor

REPO = Path(__file__).resolve().parents[3]
DEFAULT = yaml.safe_load((REPO / "hyperpod.yaml").read_text())
KEYS = {f.alias or n for n, f in HyperPodConfig.model_fields.items()}
#: The Hub on loopback's repositories by model ID (the docs' models must be among them)
HUB_MODELS = {build().repo_id: build for build in (repos.qwen_7b, repos.llama_8b, repos.llama_70b, repos.bge_large)}


def _docs_configs() -> list[tuple[str, dict]]:
    """Every docs example that makes a whole config with the default one and has a model, and hyperpod.yaml."""
    found = [("hyperpod.yaml", copy.deepcopy(DEFAULT))]
    for page in sorted((REPO / "docs").glob("*.md")):
        for n, block in enumerate(page.read_text().split("```yaml\n")[1:]):
            example = yaml.safe_load(block.split("```", 1)[0])
            if not isinstance(example, dict) or not set(example) <= KEYS:
                continue
            data = copy.deepcopy(DEFAULT) | example
            try:
                parse_config(copy.deepcopy(data), page.name)
            except ConfigError:
                continue  # a fragment, not a config
            found.append((f"{page.name}#{n}", data))
    return found


CONFIGS = _docs_configs()


def test_the_docs_show_configs_with_hub_and_s3_models():
    models = [ep["model"] for _, data in CONFIGS for ep in data["endpoints"]]
    assert len(CONFIGS) >= 4 and any("huggingface" in m for m in models) and any("s3" in m for m in models)


@pytest.mark.parametrize(("name", "data"), CONFIGS, ids=[n for n, _ in CONFIGS])
def test_a_good_config_of_the_docs_fails_no_model_check(account: Account, model_hub, name, data):
    # GIVEN the Hub on loopback with each pinned commit in its model's history, and each S3 model's weights in a
    # bucket of the config's region
    s3 = boto3.client("s3", region_name=REGION, endpoint_url=account.url, aws_access_key_id="testing",
                      aws_secret_access_key="testing")
    for ep in data["endpoints"]:
        if hf := ep["model"].get("huggingface"):
            repo = HUB_MODELS[hf["modelId"]]()
            repo.older_commits = (*repo.older_commits, hf["commitSHA"])
            model_hub.add(repo)
        if src := ep["model"].get("s3"):
            if src["bucket"] not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
                s3.create_bucket(Bucket=src["bucket"], CreateBucketConfiguration={"LocationConstraint": REGION})
            for key in ("config.json", "model.safetensors"):
                s3.put_object(Bucket=src["bucket"], Key=f"{src.get('prefix', '')}{key}", Body=b"{}")
    # WHEN doctor runs the model checks / THEN none fails or warns, and each model was checked
    status, results = run_doctor(account, data, "--only", "model")
    assert [r for r in results if r["status"] in ("fail", "warn")] == [], name
    assert status == 0
    checked = {r["resource"].split(":")[0] for r in results if r["status"] == "pass"}
    assert len(checked) == len(data["endpoints"]), (checked, results)
