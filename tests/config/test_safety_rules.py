"""Safe-by-default config rules: literal S3 prefixes, safe host paths, no token-shaped values in env/args, and the
warnings (stable IDs) for a whole bucket, an apex domain and a Secrets Manager ARN taken as complete."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.config.warnings import config_warnings, endpoint_warnings
from hyperpod_inference.facts.safety import verify_body

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "hyperpod.yaml").read_text())
TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"  # the shape of a Hugging Face access token, not a real one


def config_with(**endpoint_changes):
    cfg = copy.deepcopy(DEFAULT)
    cfg["endpoints"][0].update(endpoint_changes)
    return cfg


def s3_endpoint(prefix):
    return config_with(model={"s3": {"bucket": "my-models", "prefix": prefix}})


def problems_of(cfg) -> str:
    with pytest.raises(ConfigError) as err:
        parse_config(cfg)
    return str(err.value)


# --- item 4: S3 prefixes are literal ----------------------------------------------------------------------------
@pytest.mark.parametrize("prefix", ["*", "a/*", "qwen?", "models/*/weights"])
def test_a_wildcard_in_the_model_prefix_is_refused(prefix):
    # GIVEN an S3 model whose prefix holds an IAM wildcard
    # WHEN the config is validated
    message = problems_of(s3_endpoint(prefix))
    # THEN the prefix is named with the rule
    assert "endpoints[0].model.s3.prefix: must be a literal prefix" in message


def test_a_wildcard_in_the_capture_prefix_is_refused():
    # GIVEN a capture prefix ending in *
    cfg = copy.deepcopy(DEFAULT)
    cfg["capture"]["prefix"] = "data-capture*"
    # WHEN / THEN it is a config error naming capture.prefix
    assert "capture.prefix: must be a literal prefix: '*' would be an IAM wildcard" in problems_of(cfg)


def test_the_model_prefix_is_a_folder_for_grants_but_written_as_given():
    # GIVEN a prefix without a trailing slash
    endpoint = parse_config(s3_endpoint("qwen")).endpoints[0]
    # THEN grants and listings use the folder qwen/, and the prefix itself (modelLocation) is unchanged
    assert endpoint.model.s3.folder_prefix == "qwen/"
    assert endpoint.model.s3.prefix == "qwen"


@pytest.mark.parametrize("prefix", ["", None])
def test_an_empty_or_omitted_prefix_is_allowed_with_the_whole_bucket_warning(prefix):
    # GIVEN an S3 model with no prefix (the whole bucket)
    model = {"s3": {"bucket": "my-models"} | ({} if prefix is None else {"prefix": prefix})}
    endpoint = parse_config(config_with(model=model)).endpoints[0]
    # WHEN its warnings are listed
    warnings = [w for w in endpoint_warnings(endpoint) if w.id == "wholeBucket"]
    # THEN one wholeBucket warning names the prefix field
    assert [(w.path, w.annotation_id) for w in warnings] == [("model.s3.prefix", "hyperpod-inference:wholeBucket")]


def test_a_folder_prefix_gets_no_whole_bucket_warning():
    endpoint = parse_config(s3_endpoint("qwen/")).endpoints[0]
    assert "wholeBucket" not in [w.id for w in endpoint_warnings(endpoint)]


# --- item 17: host paths ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path, rule", [
    ("/", "must not be '/'"),
    ("/etc", "must not be /etc or under it"),
    ("/var/lib/kubelet/pods", "must not be /var/lib/kubelet or under it"),
    ("/lib64/x", "must not be /lib64 or under it"),
    ("/var/run", "must not be /var/run or under it"),
    ("/opt/../etc", "must be a normalized absolute path"),
    ("/opt/./nvme", "must be a normalized absolute path"),
    ("/opt//nvme", "must be a normalized absolute path"),
    ("/opt/nvme/", "must be a normalized absolute path"),
])
def test_an_unsafe_weight_cache_host_path_is_refused(path, rule):
    # GIVEN a weight cache on a system directory or a path that is not normalized
    message = problems_of(config_with(weightCache={"mode": "daemonset", "hostPath": path}))
    # THEN weightCache.hostPath is named with the rule
    assert f"endpoints[0].weightCache.hostPath: {rule}" in message


def test_an_unsafe_fsx_node_path_is_refused():
    # GIVEN an FSx source whose node mount is under /proc
    cfg = config_with(model={"fsx": {"fileSystemId": "fs-0123456789abcdef0", "path": "/qwen", "nodePath": "/proc/1"}})
    # THEN model.fsx.nodePath is named with the rule
    assert "endpoints[0].model.fsx.nodePath: must not be /proc or under it" in problems_of(cfg)


@pytest.mark.parametrize("path", ["/..", "/qwen/../..", "/./", "/qwen/.", "//.."])
def test_an_fsx_model_path_with_dot_segments_is_refused(path):
    # GIVEN an FSx source whose folder is spelled with '.' or '..' (/.. under /fsx is the node's root directory)
    cfg = config_with(model={"fsx": {"fileSystemId": "fs-0123456789abcdef0", "path": path, "nodePath": "/fsx"}},
                      weightCache={"mode": "daemonset"})
    # WHEN the config is validated THEN model.fsx.path is named with the rule
    assert "endpoints[0].model.fsx.path: must not contain '.' or '..' segments" in problems_of(cfg)


@pytest.mark.parametrize("path", ["/opt/dlami/nvme", "/mnt/k8s-disks/0", "/var/lib/models", "/opt/lib"])
def test_a_data_directory_is_accepted_as_host_path(path):
    cfg = parse_config(config_with(weightCache={"mode": "daemonset", "hostPath": path}))
    assert cfg.endpoints[0].weight_cache.host_path == path


# --- item 9: no token-shaped values -----------------------------------------------------------------------------
def test_a_token_in_env_is_refused_naming_the_token_field():
    # GIVEN an endpoint that passes a Hugging Face token as an environment variable
    message = problems_of(config_with(env={"HF_TOKEN": TOKEN}))
    # THEN the variable is named and the message points at model.huggingface.token
    assert "endpoints[0].env.HF_TOKEN: looks like a Hugging Face token" in message
    assert "model.huggingface.token" in message
    assert TOKEN not in message  # the error does not repeat the secret


def test_a_token_inside_an_argument_is_refused_naming_the_argument():
    message = problems_of(config_with(args=["--max-model-len", "8192", f"--hf-token={TOKEN}"]))
    assert "endpoints[0].args[2]: looks like a Hugging Face token" in message


@pytest.mark.parametrize(("changes", "path"), [
    ({"specOverrides": {"worker": {"environmentVariables": [{"name": "T", "value": TOKEN}]}}},
     "endpoints[0].specOverrides.worker.environmentVariables[0].value"),
    ({"tags": [{"name": "team", "value": f"ml {TOKEN}"}]}, "endpoints[0].tags[0].value"),
    ({"verify": {"payload": {"inputs": f"token {TOKEN}"}}}, "endpoints[0].verify.payload.inputs"),
    ({"verify": {"payload": f'{{"inputs": "{TOKEN}"}}'}}, "endpoints[0].verify.payload"),
    ({"command": ["python3", "-m", "serve", f"--token={TOKEN}"]}, "endpoints[0].command[3]"),
    ({"specOverrides": {"kubernetes": {"annotations": {"note": TOKEN}, "labels": {"k": TOKEN}}}},
     "endpoints[0].specOverrides.kubernetes.annotations.note"),
    ({"specOverrides": {"kubernetes": {"annotations": {TOKEN: "x"}}}}, "endpoints[0].specOverrides.kubernetes.annotations"),
    ({"env": {"WRAPPED": {"valueFrom": {"secretKeyRef": {"name": TOKEN, "key": "t"}}}}},
     "endpoints[0].env.WRAPPED.valueFrom.secretKeyRef.name"),
])
def test_a_token_in_any_free_form_field_of_an_endpoint_is_refused_naming_its_path(changes, path):
    # GIVEN an endpoint with a Hugging Face token written into a free-form field (or as a key)
    # WHEN the config is validated
    message = problems_of(config_with(**changes))
    # THEN the field's path is named with the rule, and the error does not repeat the token
    assert f"{path}: " in message and "looks like a Hugging Face token" in message.split(f"{path}: ", 1)[1]
    assert TOKEN not in message


def test_a_token_in_the_operators_addon_overrides_is_refused_naming_its_path():
    # GIVEN the add-on's configuration overrides carrying a token (a section outside the endpoints)
    cfg = copy.deepcopy(DEFAULT)
    cfg["operator"]["addonConfigurationOverrides"] = {"controller": {"env": {"HF": TOKEN}}}
    # WHEN / THEN it is refused at its path
    message = problems_of(cfg)
    assert "operator.addonConfigurationOverrides.controller.env.HF: looks like a Hugging Face token" in message
    assert TOKEN not in message


def test_a_config_built_in_python_gets_the_endpoint_rule_too():
    from hyperpod_inference.config.models import HyperPodConfig

    # GIVEN a config built without the loader, whose endpoint's specOverrides carry a token
    cfg = config_with(specOverrides={"worker": {"environmentVariables": [{"name": "T", "value": TOKEN}]}})
    # WHEN the model validates it THEN the endpoint's own rule refuses it at the same path
    with pytest.raises(ValueError, match="looks like a Hugging Face token") as err:
        HyperPodConfig.model_validate(cfg)
    assert "specOverrides" in str(err.value) and TOKEN not in str(err.value)


def test_values_that_only_start_with_hf_are_accepted():
    cfg = parse_config(config_with(env={"HF_HOME": "/tmp/hf_cache", "MODE": "hf_transfer"}))
    assert cfg.endpoints[0].env["MODE"] == "hf_transfer"


# --- items 5 and 6: warnings ------------------------------------------------------------------------------------
def test_an_apex_domain_name_is_warned():
    # GIVEN an endpoint on the zone apex
    cfg = parse_config(config_with(domainName="example.com"))
    # WHEN the config's warnings are listed THEN the apex is warned with its path
    assert [(w.id, w.path) for w in config_warnings(cfg) if w.id == "apexDomain"] == [
        ("apexDomain", "endpoints[0].domainName")]


def test_a_name_below_the_apex_is_not_warned():
    assert "apexDomain" not in [w.id for w in config_warnings(parse_config(DEFAULT))]


@pytest.mark.parametrize("name, warned", [("hf-token-AbCdEf", False), ("hf-token", True), ("hf/token", True)])
def test_only_a_partial_secret_arn_is_warned(name, warned):
    # GIVEN a token synced from Secrets Manager, by an ARN that does or does not end in -XXXXXX
    arn = f"arn:aws:secretsmanager:us-west-2:111122223333:secret:{name}"
    hf = copy.deepcopy(DEFAULT["endpoints"][0]["model"]["huggingface"]) | {"token": {"secretsManagerArn": arn}}
    endpoint = parse_config(config_with(model={"huggingface": hf})).endpoints[0]
    # THEN a complete ARN (the console's, with its suffix) is granted exactly and not warned; only a partial one,
    # granted with -??????, is
    ids = [w.id for w in endpoint_warnings(endpoint)]
    assert ("secretArnPartial" in ids) is warned


# --- item 13: verify.payload ------------------------------------------------------------------------------------
@pytest.mark.parametrize("payload, body", [
    ({"inputs": "Hi", "parameters": {"max_new_tokens": 8}}, '{"inputs":"Hi","parameters":{"max_new_tokens":8}}'),
    ([{"role": "user", "content": "Hi"}], '[{"role":"user","content":"Hi"}]'),
    ('{"inputs": "Hi"}', '{"inputs": "Hi"}'),
])
def test_verify_payload_may_be_a_mapping_a_list_or_a_string(payload, body):
    # GIVEN a verify payload written as YAML structure or as a string
    cfg = parse_config(config_with(verify={"payload": payload}))
    # THEN it validates and the body sent is JSON for a mapping or list, the string as given
    verify = cfg.endpoints[0].verify
    assert verify_body(verify.payload, verify.content_type, "") == body


def test_a_mapping_payload_needs_a_json_content_type():
    message = problems_of(config_with(verify={"payload": {"a": 1}, "contentType": "text/csv"}))
    assert "endpoints[0].verify.payload: a mapping or list is sent as JSON and needs a JSON content type" in message


def test_show_response_defaults_to_off():
    assert parse_config(DEFAULT).endpoints[0].verify.show_response is False


def test_the_sagemaker_source_account_condition_is_on_by_default_and_can_be_switched_off():
    assert parse_config(DEFAULT).operator.sagemaker_source_account is True
    cfg = copy.deepcopy(DEFAULT)
    cfg["operator"]["sagemakerSourceAccount"] = False
    assert parse_config(cfg).operator.sagemaker_source_account is False
