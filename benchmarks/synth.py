"""Synth time of the default app vs an empty CDK app. Run manually (takes a few minutes):

    python benchmarks/synth.py [--rounds 5] [--write]

Each round runs, in alternating order, `cdk synth --no-notices -q -o <fresh dir>` of
(a) the default app at the repository root (default `hyperpod.yaml`), and
(b) an empty CDK app (one empty `Stack`, same venv, same CLI, same flags and same feature flags from `cdk.json`)
in a temporary folder, and
(c) the same empty app with aws-cdk-lib's built-in CloudFormation validator off, as the default app has it, and
(d) that app importing the aws-cdk-lib modules and libraries the default app uses, with the cdk-nag checks on,
building nothing (the libraries' floor), and
(e) that app building each resource type of the default app's templates once by hand (the same aws-cdk-lib classes,
an imported cluster with the kubectl layer, one cdk8s chart of the same kinds applied through `add_cdk8s_chart`,
cdk-nag on): the hand-written equivalent floor, which also pays the first use of each class's JS and the assets.
Prints a Markdown section with the medians, the medians of the per-round ratios, and the CLI's own performance
counters; `--write` puts it into the `## Synth time` section of BENCHMARKS.md. The headline figure is (a) / (d): what
the default app costs above the libraries it imports; (a) / (e), (a) / (c) and (a) / (b) are shown beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import REPO, compile_package, machine, median, perf_counters, synth, tool_versions, update_section

EMPTY_APP = '''import aws_cdk as cdk

app = cdk.App()
cdk.Stack(app, "Empty")
app.synth()
'''
# The same empty app with aws-cdk-lib's built-in CloudFormation validator off, as the default app has it: the
# like-for-like comparison of what this library adds.
EMPTY_APP_NO_VALIDATOR = EMPTY_APP.replace("cdk.App()", "cdk.App(builtin_cloud_formation_validation=False)")
# The same empty app (validator off) importing what the default app uses from aws-cdk-lib, its kubectl layer,
# cdk8s, cdk8s-plus-28 and cdk-nag, with the cdk-nag checks on: what those libraries cost before this library builds
# anything, the floor of any app that uses them.
#: What the libraries' floor imports (and the included-template app with it).
LIBRARY_IMPORTS = """import aws_cdk as cdk
import cdk8s  # noqa: F401
import cdk8s_plus_28  # noqa: F401
from aws_cdk import aws_athena, aws_certificatemanager, aws_cloudwatch, aws_eks, aws_glue, aws_iam  # noqa: F401
from aws_cdk import aws_kms, aws_lambda, aws_logs, aws_route53, aws_s3, custom_resources, region_info  # noqa: F401
from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer  # noqa: F401
from cdk_nag import AwsSolutionsChecks
"""
LIBRARIES_APP = LIBRARY_IMPORTS + """
app = cdk.App(builtin_cloud_formation_validation=False)
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
cdk.Stack(app, "Empty")
app.synth()
"""
# The libraries' floor app building, once each, the resource types of the default app's templates by hand: what a
# hand-written app of these resources pays on top of the libraries (the first use of each class's JS in the jsii
# kernel, the kubectl provider's nested stack and its assets, cdk8s chart synthesis, cdk-nag over the resources).
HAND_WRITTEN_APP = '''import os

import aws_cdk as cdk
import cdk8s
import cdk8s_plus_28 as kplus
from aws_cdk import aws_athena as athena, aws_certificatemanager as acm, aws_cloudwatch as cw, aws_eks as eks
from aws_cdk import aws_glue as glue, aws_iam as iam, aws_kms as kms, aws_lambda as lambda_, aws_logs as logs
from aws_cdk import aws_route53 as route53, aws_s3 as s3, custom_resources as cr
from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer
from cdk_nag import AwsSolutionsChecks

HERE = os.path.dirname(os.path.abspath(__file__))
ACCOUNT = "111122223333"
app = cdk.App(builtin_cloud_formation_validation=False)
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
stack = cdk.Stack(app, "HandWritten", env=cdk.Environment(account=ACCOUNT, region="us-west-2"))
oidc_arn = f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/EXAMPLE"
cluster = eks.Cluster.from_cluster_attributes(
    stack, "Cluster", cluster_name="my-hp-eks", kubectl_role_arn=f"arn:aws:iam::{ACCOUNT}:role/hp-eks-admin",
    kubectl_layer=KubectlV33Layer(stack, "KubectlLayer"),
    open_id_connect_provider=iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(stack, "Oidc", oidc_arn))
key = kms.Key(stack, "Key", enable_key_rotation=True, removal_policy=cdk.RemovalPolicy.RETAIN)
kms.Alias(stack, "Alias", alias_name="alias/hand-written", target_key=key)
logs_bucket = s3.Bucket(stack, "AccessLogs", encryption=s3.BucketEncryption.S3_MANAGED, enforce_ssl=True,
                        block_public_access=s3.BlockPublicAccess.BLOCK_ALL)
bucket = s3.Bucket(stack, "Capture", encryption_key=key, enforce_ssl=True, server_access_logs_bucket=logs_bucket,
                   block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                   lifecycle_rules=[s3.LifecycleRule(expiration=cdk.Duration.days(365))])
role = iam.Role(stack, "PodRole", assumed_by=iam.CompositePrincipal(
    iam.FederatedPrincipal(oidc_arn, {"StringEquals": {"oidc.eks.us-west-2.amazonaws.com/id/EXAMPLE:sub": "x"}},
                           "sts:AssumeRoleWithWebIdentity"),
    iam.ServicePrincipal("sagemaker.amazonaws.com"), iam.ArnPrincipal(f"arn:aws:iam::{ACCOUNT}:role/other")))
policy = iam.Policy(stack, "PodPolicy", statements=[iam.PolicyStatement(actions=["s3:PutObject"],
                                                                         resources=[bucket.arn_for_objects("c/x")])])
policy.attach_to_role(role)
eks.CfnAddon(stack, "Addon", addon_name="amazon-sagemaker-hyperpod-inference", cluster_name=cluster.cluster_name,
             service_account_role_arn=role.role_arn)
glue_db = glue.CfnDatabase(stack, "Database", catalog_id=ACCOUNT,
                           database_input=glue.CfnDatabase.DatabaseInputProperty(name="capture"))
table = glue.CfnTable(stack, "Table", catalog_id=ACCOUNT, database_name="capture",
                      table_input=glue.CfnTable.TableInputProperty(name="t", table_type="EXTERNAL_TABLE"))
table.node.add_dependency(glue_db)
wg = athena.CfnWorkGroup(stack, "WorkGroup", name="capture", state="ENABLED")
athena.CfnNamedQuery(stack, "Query", database="capture", work_group="capture", query_string="SELECT 1")
athena.CfnPreparedStatement(stack, "Statement", statement_name="s", work_group="capture", query_statement="SELECT 1")
zone = route53.PublicHostedZone(stack, "Zone", zone_name="example.com")
acm.Certificate(stack, "Certificate", domain_name="chat.example.com",
                validation=acm.CertificateValidation.from_dns(zone))
handler_props = dict(runtime=lambda_.Runtime.PYTHON_3_14, architecture=lambda_.Architecture.ARM_64,
                     handler="index.handler", code=lambda_.Code.from_asset(os.path.join(HERE, "handler")),
                     timeout=cdk.Duration.seconds(60))
on_event = lambda_.Function(stack, "OnEvent", log_group=logs.LogGroup(stack, "OnEventLogs"), **handler_props)
is_complete = lambda_.Function(stack, "IsComplete", **handler_props)
provider = cr.Provider(stack, "Provider", on_event_handler=on_event, is_complete_handler=is_complete,
                       total_timeout=cdk.Duration.minutes(60), query_interval=cdk.Duration.seconds(30))
cdk.CustomResource(stack, "Verify", service_token=provider.service_token, resource_type="Custom::Verify")
cw.CfnDashboard(stack, "Dashboard", dashboard_body='{"widgets": []}')
chart = cdk8s.Chart(cdk8s.App(), "Chart")
kplus.Namespace(chart, "Namespace", metadata=cdk8s.ApiObjectMetadata(name="inference"))
sa = kplus.ServiceAccount(chart, "ServiceAccount", metadata=cdk8s.ApiObjectMetadata(name="sa", namespace="inference"))
kplus.ConfigMap(chart, "ConfigMap", metadata=cdk8s.ApiObjectMetadata(name="cm", namespace="inference"),
                data={"a": "b"})
k8s_role = kplus.Role(chart, "Role", metadata=cdk8s.ApiObjectMetadata(name="r", namespace="inference"))
k8s_role.allow(["get"], kplus.ApiResource.CONFIG_MAPS)
kplus.RoleBinding(chart, "RoleBinding", role=k8s_role,
                  metadata=cdk8s.ApiObjectMetadata(name="rb", namespace="inference")).add_subjects(sa)
kplus.NetworkPolicy(chart, "NetworkPolicy", metadata=cdk8s.ApiObjectMetadata(name="np", namespace="inference"))
cdk8s.ApiObject(chart, "Endpoint", api_version="inference.sagemaker.aws.amazon.com/v1", kind="InferenceEndpointConfig",
                metadata=cdk8s.ApiObjectMetadata(name="qwen-chat", namespace="inference")).add_json_patch(
    cdk8s.JsonPatch.add("/spec", {"replicas": 1}))
cluster.add_cdk8s_chart("Chart", chart)
ACKS = [
    "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly]",
    "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
    'IAM4[Policy::{"Fn::If":["HandlerHasEcrPublic195AF58A",{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},'
    '":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}]',
    *(f"IAM5[Resource::<{fn}.Arn>:*]" for fn in ("Handler886CB40B", "IsComplete544AE5AD", "OnEvent74718524",
                                                  "ProviderframeworkisComplete26D7B0CB",
                                                  "ProviderframeworkonTimeout0B47CA38")),
    "L1", "SF1", "SF2"]
cdk.Validations.of(stack).acknowledge(
    *(cdk.Acknowledgment(id=f"AwsSolutions::AwsSolutions-{a}", reason="benchmark app") for a in ACKS))
cdk.CfnOutput(stack, "BucketName", value=bucket.bucket_name)
app.synth()
'''
HAND_WRITTEN_FILES = {"handler/index.py": "def handler(event, context):\n    return {}\n"}
# The libraries' floor app (the same imports) with the default app's own main template imported as it is
# (`CfnInclude`: every resource as an L1, without the kubectl layer, provider and manifest resources) and the default
# app's review manifests applied through the same kubectl layer as one `KubernetesManifest` each: the same template
# size and the same resources under cdk-nag (acknowledged with the default app's own finding IDs), without building
# any L2 construct. What these resources cost any app that imports these libraries, however it makes them.
INCLUDED_APP = LIBRARY_IMPORTS + '''import glob
import json
import os

import yaml
from aws_cdk import aws_eks as eks, aws_iam as iam
from aws_cdk import cloudformation_include as cfn_inc

HERE = os.path.dirname(os.path.abspath(__file__))
ACCOUNT = "111122223333"
app = cdk.App(builtin_cloud_formation_validation=False)
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
stack = cdk.Stack(app, "Included", env=cdk.Environment(account=ACCOUNT, region="us-west-2"))
cfn_inc.CfnInclude(stack, "Template", template_file=os.path.join(HERE, "template.json"))
oidc_arn = f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/EXAMPLE"
cluster = eks.Cluster.from_cluster_attributes(
    stack, "Cluster", cluster_name="my-hp-eks", kubectl_role_arn=f"arn:aws:iam::{ACCOUNT}:role/hp-eks-admin",
    kubectl_layer=KubectlV33Layer(stack, "KubectlLayer"),
    open_id_connect_provider=iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(stack, "Oidc", oidc_arn))
for i, path in enumerate(sorted(glob.glob(os.path.join(HERE, "manifests", "*.yaml")))):
    with open(path) as f:
        eks.KubernetesManifest(stack, f"Manifest{i}", cluster=cluster, manifest=[d for d in yaml.safe_load_all(f) if d])
cdk.Validations.of(stack).acknowledge(*(cdk.Acknowledgment(id=a, reason="benchmark app")
                                        for a in json.load(open(os.path.join(HERE, "acks.json")))))
app.synth()
'''
#: What the included template leaves out: the resources INCLUDED_APP builds itself (and the CDK metadata).
REBUILT_TYPES = ("Custom::AWSCDK-EKS-KubernetesResource", "AWS::CloudFormation::Stack", "AWS::Lambda::LayerVersion",
                 "AWS::CDK::Metadata")
TARGET = 1.25
WHERE_THE_TIME_GOES = """Where the default app's time goes above the libraries' floor (in-process, jsii's kernel calls timed by a shim
around its process provider, 3 runs at load 0.2-0.7, 2026-12-05): importing, 21 kernel round trips, 0.42-0.47 s (the
libraries' assemblies, as the floor) and the library's Python (pydantic and the config models); building, 416 round
trips, 0.58-0.63 s in the kernel, most of it the first use of each class's JS (the kubectl layer with its asset, the
first `KubernetesManifest` with the kubectl provider's nested stack, the verification's provider framework), and the
Python of the constructs (0.04-0.08 s of it stripping the agent's source); synthesis, 136 round trips, 0.45-0.50 s
(cdk-nag over the resources, the cdk8s charts, the templates, the size and name checks). No call repeats the same
work: the physical-name check read each named resource's path (42 round trips) and now reads it only for a name it
refuses; what is left is one call per resource or setting the app makes."""
COUNTERS = ["phase:Load", "phase:Construction", "phase:Synthesis", "validateTemplates", "fs.copyFileSync"]


def make_empty_app(folder: Path, source: str = EMPTY_APP, files: dict[str, str] | None = None) -> Path:
    """An empty app with the repository's feature flags (the same `cdk.json` context, minus the app's own keys)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "app.py").write_text(source)
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    context = json.loads((REPO / "cdk.json").read_text()).get("context", {})
    context = {k: v for k, v in context.items() if k not in ("config", "stackName")}
    (folder / "cdk.json").write_text(json.dumps({"app": "python3 app.py", "context": context}, indent=1))
    return folder


def included_template(outdir: Path) -> dict[str, Any]:
    """The default app's main template (in ``outdir``) without ``REBUILT_TYPES`` (a reference to one becomes a plain
    string) and without its bootstrap-version check (the including stack adds its own)."""
    main = next(p for p in sorted(outdir.glob("*.template.json")) if not p.name.endswith(".nested.template.json"))
    template = json.loads(main.read_text())
    resources = template["Resources"]
    dropped = {k for k, r in resources.items() if r["Type"] in REBUILT_TYPES}

    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            if len(value) == 1:
                (fn, arg), = value.items()
                target = arg if fn == "Ref" else (arg[0] if isinstance(arg, list) else str(arg).split(".")[0])
                if fn in ("Ref", "Fn::GetAtt") and target in dropped:
                    return "dropped"
            return {k: scrub(v) for k, v in value.items()}
        return [scrub(v) for v in value] if isinstance(value, list) else value

    kept = {k: scrub(r) for k, r in resources.items() if k not in dropped}
    for r in kept.values():
        if "DependsOn" in r:
            deps = [d for d in ([r["DependsOn"]] if isinstance(r["DependsOn"], str) else r["DependsOn"])
                    if d not in dropped]
            if deps:
                r["DependsOn"] = deps
            else:
                del r["DependsOn"]
    template["Resources"] = kept
    template["Outputs"] = scrub(template.get("Outputs", {}))
    template.get("Parameters", {}).pop("BootstrapVersion", None)
    template.get("Rules", {}).pop("CheckBootstrapVersion", None)
    return {k: v for k, v in template.items() if v or k == "Resources"}


def prepare_included_app(default_out: Path, folder: Path) -> None:
    """INCLUDED_APP's inputs from one synth of the default app: its template, review manifests and acknowledgments."""
    (folder / "template.json").write_text(json.dumps(included_template(default_out)))
    shutil.rmtree(folder / "manifests", ignore_errors=True)
    shutil.copytree(default_out / "manifests", folder / "manifests")
    report = json.loads((default_out / "validation-report.json").read_text())
    acks = sorted({v["acknowledgedId"] for r in report["pluginReports"] for v in r.get("suppressedViolations", [])})
    (folder / "acks.json").write_text(json.dumps(acks))


def measure(rounds: int, work: Path) -> dict[str, Any]:
    empty = make_empty_app(work / "empty-app")
    bare = make_empty_app(work / "empty-app-no-validator", EMPTY_APP_NO_VALIDATOR)
    libraries = make_empty_app(work / "libraries-app", LIBRARIES_APP)
    hand_written = make_empty_app(work / "hand-written-app", HAND_WRITTEN_APP, HAND_WRITTEN_FILES)
    included = make_empty_app(work / "included-app", INCLUDED_APP)
    cases = {"default": REPO, "empty": empty, "empty-no-validator": bare, "libraries": libraries,
             "hand-written": hand_written, "included": included}
    times: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    counters: dict[str, list[dict[str, float]]] = {k: [] for k in cases}
    ratios, like_for_like, headline, hand, first_use, inc, resources = [], [], [], [], [], [], []
    loads: list[float] = []
    compile_package()
    # one untimed warm-up of each (jsii package cache, Python bytecode, page cache)
    for name, cwd in cases.items():
        synth(cwd, work / f"warm-{name}")
        if name == "default":
            prepare_included_app(work / "warm-default", included)
        shutil.rmtree(work / f"warm-{name}", ignore_errors=True)
    for r in range(rounds):
        order = list(cases) if r % 2 == 0 else list(reversed(cases))
        for name in order:
            out = work / f"out-{name}-{r}"
            t, c = synth(cases[name], out)
            times[name].append(t)
            cpu[name].append(c)
            counters[name].append(perf_counters(out))
            shutil.rmtree(out, ignore_errors=True)
            print(f"round {r + 1}/{rounds} {name}: {t:.2f} s wall, {c:.2f} s CPU", file=sys.stderr)
        ratios.append(times["default"][-1] / times["empty"][-1])
        like_for_like.append(times["default"][-1] / times["empty-no-validator"][-1])
        headline.append(times["default"][-1] / times["libraries"][-1])
        hand.append(times["default"][-1] / times["hand-written"][-1])
        first_use.append(times["hand-written"][-1] / times["libraries"][-1])
        inc.append(times["default"][-1] / times["included"][-1])
        resources.append(times["included"][-1] / times["libraries"][-1])
        print(f"round {r + 1}/{rounds}: default / floor {headline[-1]:.2f}, default / hand-written "
              f"{hand[-1]:.2f}, default / included {inc[-1]:.2f}; load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        loads.append(os.getloadavg()[0])
    return {"times": times, "cpu": cpu, "counters": counters, "ratios": ratios, "like_for_like": like_for_like,
            "headline": headline, "hand": hand, "first_use": first_use, "included": inc, "resources": resources,
            "loads": loads}


def counter_median(samples: list[dict[str, float]], key: str) -> str:
    values = [s.get(key, 0.0) for s in samples if s]
    return f"{median(values) / 1000:.2f}" if values else "n/a"


def runs(values: list[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


def markdown(result: dict[str, Any], rounds: int) -> str:
    times: dict[str, list[float]] = result["times"]
    cpu: dict[str, list[float]] = result["cpu"]
    counters: dict[str, list[dict[str, float]]] = result["counters"]
    med = {k: median(v) for k, v in times.items()}
    cmed = {k: median(v) for k, v in cpu.items()}
    headline, hand, first_use = median(result["headline"]), median(result["hand"]), median(result["first_use"])
    loads = result["loads"]
    verdict = "meets" if headline <= TARGET else "misses"
    labels = {
        "default": "default app",
        "empty": "empty app",
        "empty-no-validator": "empty app, built-in validator off",
        "libraries": "the libraries' floor: validator off, importing the default app's libraries, cdk-nag on",
        "hand-written": "hand-written equivalent floor: the libraries' floor building each resource type of the "
                        "default app once",
        "included": "the libraries' floor with the default app's template imported (`CfnInclude`) and its "
                    "manifests applied as `KubernetesManifest`",
    }
    lines = [
        "`python benchmarks/synth.py --rounds N`: wall time of the CDK CLI's `synth --no-notices -q -o <fresh dir>` (what "
        "`make synth` runs), the default "
        "app (default `hyperpod.yaml`: one endpoint, kubectl delivery, cdk-nag on) against apps in a temporary folder "
        "(same venv, CLI, flags and feature flags), interleaved in alternating order after one untimed warm-up each. "
        f"Machine: {machine()}; {tool_versions()}. {rounds} rounds; medians; load average "
        f"{min(loads):.1f}-{max(loads):.1f} during the rounds. CPU is user + system time of the CLI and the processes "
        "it waited for (the app, the jsii kernel); it is less sensitive than wall time to other load on the shared "
        "cores.",
        "",
        "| app | wall runs (s) | wall median (s) | CPU median (s) |",
        "|---|---|---:|---:|",
        *(f"| {labels[k]} | {runs(times[k])} | {med[k]:.2f} | {cmed[k]:.2f} |" for k in labels),
        "",
        f"**Default app / the libraries' floor: {headline:.2f}×** (median of the per-round ratios "
        f"{runs(result['headline'])}; ratio of medians {med['default'] / med['libraries']:.2f}×; CPU ratio "
        f"{cmed['default'] / cmed['libraries']:.2f}×). Target ≤ {TARGET}×: {verdict}. The default app's resources "
        f"alone, imported as its finished template (the last row), cost {median(result['resources']):.2f}× the floor: "
        f"the target leaves {TARGET - median(result['resources']):.2f}× for making them, however they are made. What "
        f"this library costs is the default app against that app: {median(result['included']):.2f}×.",
        "",
        f"Default app / the hand-written equivalent floor: **{hand:.2f}×** (per round {runs(result['hand'])}; CPU "
        f"ratio {cmed['default'] / cmed['hand-written']:.2f}×). Building the same resource types once by hand "
        f"already costs {first_use:.2f}× the libraries' floor (per round {runs(result['first_use'])}): the floor "
        "builds nothing, so it never pays what any app of these resources pays (the first use of each class's JS in "
        "the jsii kernel, the kubectl provider's nested stack with its two layer assets, cdk8s chart synthesis, "
        "cdk-nag over the resources).",
        "",
        f"Default app / the floor with its own template imported and its manifests applied: "
        f"{median(result['included']):.2f}× (per round {runs(result['included'])}; CPU ratio "
        f"{cmed['default'] / cmed['included']:.2f}×): every resource of the default app's templates under cdk-nag, "
        f"but no L2 construct built. That app is {median(result['resources']):.2f}× the libraries' floor (per round "
        f"{runs(result['resources'])}): what the default app's resources cost any app importing these libraries, "
        "however it makes them.",
        "",
        f"Default app / empty app, both with the built-in validator off: {median(result['like_for_like']):.2f}× (per "
        f"round {runs(result['like_for_like'])}); against an empty app with the validator on (CDK's default): "
        f"{median(result['ratios']):.2f}× (per round {runs(result['ratios'])}).",
    ]
    columns = ("default", "libraries", "hand-written", "included")
    rows = [(key, *(counter_median(counters[c], key) for c in columns)) for key in COUNTERS]
    if any(v != "n/a" for row in rows for v in row[1:]):
        lines += ["", "Median of the `performance-counters.json` that aws-cdk-lib writes during synth, seconds:", "",
                  "| counter | default app | the libraries' floor | hand-written equivalent floor | template imported |",
                  "|---|---:|---:|---:|---:|"]
        lines += [f"| `{key}` | {' | '.join(values)} |" for key, *values in rows]
    lines += ["", WHERE_THE_TIME_GOES]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--write", action="store_true", help="update the '## Synth time' section of BENCHMARKS.md")
    p.add_argument("--work-dir", default=None, help="where the temporary app and output folders go")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="synth-bench-", dir=args.work_dir))
    try:
        result = measure(args.rounds, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = markdown(result, args.rounds)
    print("## Synth time\n\n" + text)
    if args.write:
        update_section("Synth time", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
