"""One naming function for every physical name: the existing names keep exactly the output they had, and every name
fits its service's limit."""

from __future__ import annotations

import hashlib
import re

import pytest

from hyperpod_inference.facts import naming

TOKEN_REGION = "${Token[AWS.Region.8]}"
TOKEN_ACCOUNT = "${Token[AWS.AccountId.4]}"
STACK_NAMES = ["HyperPodInference", "a", "My_Stack.Name", "x" * 40, "y" * 80, "Sthree-Stack", "amzn-s3-demo-app",
               "xn--idn", "---", "Stack--With---Dashes-", "A" * 55 + "-" + "B" * 30, "p" * 47 + "-q" * 10]
ENVS = [("111122223333", "us-west-2"), ("111122223333", "ap-southeast-1"), (TOKEN_ACCOUNT, TOKEN_REGION)]


# --- the names as the library produced them before the naming layer (the reference) --------------------------------

def _old_shorten(name: str, limit: int) -> str:
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: limit - 9]}-{digest}"


def _old_role_name(stack_name: str, region: str) -> str:
    if region != TOKEN_REGION:
        return _old_shorten(f"SageMakerHyperPodInference-{stack_name}-{region}", 64)
    room = 64 - len("SageMakerHyperPodInference") - 2 - 16
    return f"SageMakerHyperPodInference-{_old_shorten(stack_name, room)}-{region}"


def _old_capture_base(stack_name: str, account: str, region: str) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", stack_name.lower())
    base = re.sub(r"-{2,}", "-", base).strip("-") or "hyperpod"
    if base.startswith(("sthree", "amzn-s3-demo", "xn-")):
        base = f"hp-{base}"
    account_len = 12 if account == TOKEN_ACCOUNT else len(account)
    region_len = 14 if region == TOKEN_REGION else len(region)
    limit = 63 - len("-capture-logs--") - account_len - region_len
    if len(base) > limit:
        digest = hashlib.sha256(base.encode()).hexdigest()[:6]
        base = f"{base[:limit - 7].rstrip('-')}-{digest}"
    return base


@pytest.mark.parametrize("stack_name", STACK_NAMES)
@pytest.mark.parametrize(("account", "region"), ENVS)
def test_existing_names_are_produced_exactly_as_before(stack_name, account, region):
    # GIVEN a stack name and an environment (literal or deploy-time)
    # WHEN the naming layer names the stack's resources
    base = naming.capture_name_base(stack_name, account, region)
    # THEN every name is exactly what the library chose before
    assert naming.execution_role_name(stack_name, region) == _old_role_name(stack_name, region)
    assert base == _old_capture_base(stack_name, account, region)
    assert naming.capture_bucket_name(base, account, region) == f"{base}-capture-{account}-{region}"
    assert naming.capture_log_bucket_name(base, account, region) == f"{base}-capture-logs-{account}-{region}"
    assert naming.capture_key_alias(base) == f"alias/{base}-data-capture"


@pytest.mark.parametrize("stack_name", STACK_NAMES)
def test_literal_names_fit_their_services_limits(stack_name):
    account, region = "111122223333", "ap-southeast-1"
    base = naming.capture_name_base(stack_name, account, region)
    assert len(naming.execution_role_name(stack_name, region)) <= naming.IAM_ROLE.max_length
    for name in (naming.capture_bucket_name(base, account, region), naming.capture_log_bucket_name(base, account, region)):
        assert naming.S3_BUCKET.problem(name) is None, name


def test_a_shortened_name_keeps_its_head_and_ends_in_a_hash_of_the_whole_name():
    # GIVEN two long names that share their head
    a = naming.physical_name("x" * 70, "a", rule=naming.LAMBDA_FUNCTION)
    b = naming.physical_name("x" * 70, "b", rule=naming.LAMBDA_FUNCTION)
    # THEN both fit, both keep the head, and they differ by the hash
    assert len(a) == len(b) == 64 and a.startswith("x" * 55) and a != b
    assert a.endswith(hashlib.sha256(("x" * 70 + "-a").encode()).hexdigest()[:8])


@pytest.mark.parametrize(("rule", "limit"), [(naming.S3_BUCKET, 63), (naming.IAM_ROLE, 64), (naming.KMS_ALIAS, 256),
                                             (naming.LAMBDA_FUNCTION, 64), (naming.ATHENA_WORKGROUP, 128),
                                             (naming.GLUE_DATABASE, 255), (naming.K8S_LABEL, 63),
                                             (naming.K8S_SUBDOMAIN, 253)])
def test_each_service_limit_is_enforced(rule, limit):
    assert rule.max_length == limit
    assert len(naming.physical_name("a" * (limit + 50), rule=rule)) == limit


def test_characters_a_service_refuses_are_an_error_naming_the_service():
    with pytest.raises(ValueError, match="S3 bucket"):
        naming.physical_name("My_Bucket", rule=naming.S3_BUCKET)
    with pytest.raises(ValueError, match="Glue database"):
        naming.physical_name("my-db", rule=naming.GLUE_DATABASE)


def test_a_user_prefix_that_cannot_make_the_capture_names_is_refused():
    assert naming.capture_name_prefix_problem("team-a", "111122223333", "us-west-2") is None
    assert "single '-'" in naming.capture_name_prefix_problem("team--a", "111122223333", "us-west-2")
    assert "reserves" in naming.capture_name_prefix_problem("sthree-x", "111122223333", "us-west-2")
    assert "at most 27" in naming.capture_name_prefix_problem("a" * 30, "111122223333", "us-west-2")


@pytest.mark.parametrize("stack_name", STACK_NAMES)
def test_tls_bucket_names_carry_the_stack_and_fit(stack_name):
    # GIVEN two stacks in one account and Region WHEN each names its TLS bucket THEN the names differ, stay under the
    # managed policy's hyperpod-tls* statements and fit S3's 63 characters
    account, region = "111122223333", "ap-southeast-1"
    name = naming.tls_bucket_name(stack_name, account, region)
    other = naming.tls_bucket_name(stack_name + "-b", account, region)
    assert name != other and name.startswith("hyperpod-tls-") and other.startswith("hyperpod-tls-")
    assert len(name) <= 63 and naming.S3_BUCKET.problem(name) is None
    assert naming.tls_bucket_name("HyperPodInference", account, region) == (
        f"hyperpod-tls-hyperpodinference-{account}-{region}")


@pytest.mark.parametrize("stack_name", STACK_NAMES)
def test_tls_certificate_prefixes_carry_the_stack_and_fit_one_dns_label(stack_name):
    # GIVEN two scopes (two stacks, or two constructs in one) WHEN each names its TLS certificate folder
    prefix = naming.tls_certificate_prefix(stack_name)
    other = naming.tls_certificate_prefix(stack_name + "-b")
    # THEN the folders differ, sit under hyperpod-inference/, and the scope is one DNS label of at most 63 characters
    assert prefix != other
    folder, scope = prefix.split("/")
    assert folder == "hyperpod-inference"
    assert len(scope) <= 63 and naming.K8S_LABEL.problem(scope) is None
    assert not scope.startswith("-") and not scope.endswith("-")


def test_a_long_tls_certificate_scope_keeps_its_head_and_ends_in_a_hash_of_the_whole_name():
    # GIVEN two 80-character scopes that share their first 70 characters
    a, b = "s" * 70 + "a" * 10, "s" * 70 + "b" * 10
    # WHEN each names its folder
    prefix_a, prefix_b = naming.tls_certificate_prefix(a), naming.tls_certificate_prefix(b)
    # THEN each scope is exactly 63 characters: the head, "-", and 6 hex digits of the whole (DNS-safe) name
    for prefix, name in ((prefix_a, a), (prefix_b, b)):
        scope = prefix.removeprefix("hyperpod-inference/")
        assert len(scope) == 63
        assert scope == "s" * 56 + "-" + hashlib.sha256(name.encode()).hexdigest()[:6]
    assert prefix_a != prefix_b
    # AND a short scope is kept, lowercased and DNS-safe; one with nothing DNS-safe falls back to "hyperpod"
    assert naming.tls_certificate_prefix("HyperPodInference") == "hyperpod-inference/hyperpodinference"
    assert naming.tls_certificate_prefix("Team_A.Prod") == "hyperpod-inference/team-a-prod"
    assert naming.tls_certificate_prefix("___") == "hyperpod-inference/hyperpod"


# --- the names the composition and the charts take from naming.py (exactly the names deployed before) -------------

def test_scope_and_iam_names_are_the_deployed_ones():
    from hyperpod_inference.facts import naming as n

    # GIVEN the default stack WHEN its names are made THEN they are those of the golden snapshot
    assert n.name_scope("HyperPodInference", "Default") == "HyperPodInference"
    assert n.name_scope("HyperPodInference", "Inference") == "HyperPodInference-Inference"
    assert n.gated_model_role_name("HyperPodInference") == "hyperpodinference-jumpstart-gated"
    assert n.service_account_role_name("HyperPodInference", "research", "llama-nvme", "ModelReader") == \
        "hyperpodinference-research-llama-nvme-ModelReader"
    long = n.service_account_role_name("S" * 40, "inference", "e" * 30, "ModelReader")
    assert len(long) == 64 and long.startswith("ssssss")
    assert n.role_arn("aws", "111122223333", "r") == "arn:aws:iam::111122223333:role/r"
    assert n.default_stack_name(None, "hp-eks", several=False) == "HyperPodInference"
    assert n.default_stack_name(None, "hp-eks", several=True) == "HyperPodInference-hp-eks"
    assert n.default_stack_name("Mine", "hp-eks", several=True) == "Mine"


def test_kubernetes_names_are_built_on_the_stack_scope():
    import hashlib

    from hyperpod_inference.facts import naming as n

    def digest(key: str, length: int = 10) -> str:
        return hashlib.sha256(key.encode()).hexdigest()[:length]

    # GIVEN a scope and keys as the charts build them WHEN named THEN each name starts with the scope and ends in
    # <10 hex of sha256(key)> or a fixed suffix
    base = f"s-hf-token-{digest('k')}"
    assert n.hf_token_names("s", "k") == {"secret": base, "store": base, "external_secret": base,
                                          "service_account": f"{base}-reader"}
    warm = n.warm_daemonset_name("s", "w")
    assert warm == f"s-nvme-warm-{digest('w')}"
    assert n.deny_ingress_policy_name(warm) == f"{warm}-deny-ingress"
    assert n.agent_code_prefix("s") == "s-nvme-agent"
    assert n.agent_code_configmap_name("p", "0123456789abcdef") == "p-0123456789"
    assert n.agent_gc_name("p") == "p-gc"
    assert n.hashed_name("p-gc", "{}") == f"p-gc-{digest('{}')}"
    assert n.model_reader_service_account_name("s", "llama") == "s-llama-model-reader"
    assert (n.endpoint_unit_name("inference", "qwen"), n.shared_unit_name("inference", "warm", warm),
            n.namespace_unit_name("inference")) == (
        "inference-qwen", f"inference-warm-{digest(warm, 8)}", "namespace-inference")


# --- Kubernetes names ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stack_name", STACK_NAMES)
def test_the_kubernetes_scope_carries_the_stack_and_keeps_every_name_built_on_it_a_dns_label(stack_name):
    # GIVEN a stack name WHEN its Kubernetes scope is built
    scope = naming.kubernetes_scope(stack_name, stack_name, "Default")
    # THEN it is a DNS-1123 label of at most 30 characters, starting with the readable stack name where it fits
    assert naming.K8S_LABEL.problem(scope) is None and len(scope) <= naming.KUBERNETES_SCOPE_LENGTH
    assert re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", scope), scope
    readable = naming.dns_safe(stack_name, default="hyperpod")
    if len(readable) <= 23:
        assert scope.startswith(readable.strip("-") + "-")
    # AND every name built on it stays a DNS-1123 label (the warm DaemonSet's name is also a label value)
    for name in (naming.token_sync_name(scope, "k") + "-reader", naming.warm_daemonset_name(scope, "k"),
                 naming.agent_code_prefix(scope) + "-gc-0123456789"):
        assert naming.K8S_LABEL.problem(name) is None, name


def test_two_stacks_and_two_constructs_of_one_id_get_different_kubernetes_scopes():
    # GIVEN stacks whose names differ only in case or punctuation, and one construct id under two parents
    scopes = [naming.kubernetes_scope("TeamA", "TeamA", "Default"),
              naming.kubernetes_scope("teama", "teama", "Default"),
              naming.kubernetes_scope("Team-A", "Team-A", "Default"),
              naming.kubernetes_scope("Platform-Inference", "Platform", "Blue/Inference"),
              naming.kubernetes_scope("Platform-Inference", "Platform", "Green/Inference")]
    # THEN no two are equal (the digest of the stack name and the construct path tells them apart)
    assert len(set(scopes)) == len(scopes), scopes


def test_the_models_configmap_is_named_by_its_content():
    # GIVEN one warm DaemonSet and two model lists THEN each content has its own name under the DaemonSet's
    a = naming.models_configmap_name("s-nvme-warm-0123456789", '[{"modelId": "a"}]')
    b = naming.models_configmap_name("s-nvme-warm-0123456789", '[{"modelId": "b"}]')
    assert a != b and a.startswith("s-nvme-warm-0123456789-models-")
    assert a == naming.models_configmap_name("s-nvme-warm-0123456789", '[{"modelId": "a"}]')
