"""The commands the documentation shows, and a check per kind: `aws` against the installed botocore service models,
`kubectl` against the built-in kinds and the operator's CRDs, `make` against the Makefile, `cdk` against the CLI's
own help. Each check returns the problems it found (an empty list: the command is well formed)."""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.docs.helpers import REPO

SHELL_LANGS = ("", "bash", "sh", "shell", "console")
TOOLS = ("aws", "kubectl", "make", "cdk", "npx")


@dataclass(frozen=True)
class Command:
    page: str
    text: str
    #: In a fenced shell block (a line to run), not an inline code span of the prose.
    in_block: bool = True

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text, comments=True)

    @property
    def tool(self) -> str:
        argv = self.argv
        return "cdk" if argv[:2] == ["npx", "cdk"] else argv[0]

    @property
    def needs_account(self) -> bool:
        argv = [a for a in self.argv if a != "npx"]
        return argv[0] in ("aws", "kubectl") or (argv[0] == "cdk" and len(argv) > 1
                                                 and argv[1] in ("bootstrap", "deploy", "destroy", "diff"))


def commands(path: Path) -> list[Command]:
    """Shell lines of the page's fenced shell blocks, and inline code spans, that start with a known tool."""
    text = path.read_text()
    out: list[Command] = []
    for lang, body in re.findall(r"^\s*```(\w*)\n(.*?)^\s*```", text, flags=re.S | re.M):
        if lang not in SHELL_LANGS:
            continue
        for line in re.sub(r"\\\n\s*", " ", body).splitlines():  # a line ending in \ continues on the next
            line = line.strip()
            if line.split(" ", 1)[0] in TOOLS and not _mention(line):
                out.append(Command(path.name, line))
    prose = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.S | re.M)
    for span in re.findall(r"`([^`\n]+)`", prose):
        if span.split(" ", 1)[0] in TOOLS and " " in span and not _mention(span):
            out.append(Command(path.name, span, in_block=False))
    return out


def _mention(text: str) -> bool:
    """A generic mention such as `kubectl …` or `make <target>`, not a command."""
    words = text.split()
    return len(words) < 2 or _placeholder(words[1]) or (words[:2] == ["npx", "cdk"] and len(words) > 2
                                                         and _placeholder(words[2]))


def _placeholder(token: str) -> bool:
    return "…" in token or "<" in token or token in ("...",)


# ------------------------------------------------------------------------------------------------------------ aws
AWS_GLOBAL_VALUE = {"--region", "--profile", "--output", "--query", "--endpoint-url", "--color", "--cli-read-timeout",
                    "--cli-connect-timeout", "--ca-bundle"}
AWS_GLOBAL_FLAG = {"--no-cli-pager", "--debug", "--no-verify-ssl", "--no-paginate", "--no-sign-request"}
AWS_PAGINATION = {"--max-items", "--starting-token", "--page-size"}
#: The AWS CLI's high-level `aws s3` commands (not operations of a service model).
AWS_S3_HIGH_LEVEL = {"ls", "cp", "mv", "rm", "sync", "mb", "rb", "presign", "website"}
#: CLI service names that differ from botocore's.
AWS_SERVICE_ALIASES = {"s3api": "s3"}
#: Commands the AWS CLI adds to a service (no operation of its botocore model), with their parameters.
AWS_CLI_COMMANDS = {("eks", "update-kubeconfig"): {"name", "region", "alias", "role-arn", "kubeconfig", "dry-run",
                                                   "verbose", "user-alias"}}


def _cli_name(service: str, operation: str, param: str) -> str:
    """The option the AWS CLI gives a parameter: its own name, unless the CLI renames it where it would clash with a
    global option (``aws sns subscribe --notification-endpoint``: awscli.customizations.argrename)."""
    from awscli.customizations.argrename import ARGUMENT_RENAMES

    return ARGUMENT_RENAMES.get(f"{service}.{operation}.{param}", param)


@functools.cache
def _botocore_session() -> Any:
    import botocore.session

    return botocore.session.get_session()


def check_aws(argv: list[str]) -> list[str]:
    from botocore import xform_name

    args = argv[1:]
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i].split("=", 1)[0]
        if a in AWS_GLOBAL_VALUE:
            i += 1 if "=" in args[i] else 2
            continue
        if a in AWS_GLOBAL_FLAG or a == "--version":
            i += 1
            continue
        rest.append(args[i])
        i += 1
    if not rest:
        return []  # aws --version
    service = AWS_SERVICE_ALIASES.get(rest[0], rest[0])
    if rest[0] == "s3":
        return [] if len(rest) > 1 and rest[1] in AWS_S3_HIGH_LEVEL else [f"aws s3: unknown command {rest[1:2]}"]
    session = _botocore_session()
    if service not in session.get_available_services():
        return [f"aws {rest[0]}: no such service in botocore {session.user_agent_version}"]
    model = session.get_service_model(service)
    if len(rest) < 2:
        return [f"aws {rest[0]}: no operation given"]
    ops = {xform_name(op, "-"): op for op in model.operation_names}
    if (rest[0], rest[1]) in AWS_CLI_COMMANDS:
        known = AWS_CLI_COMMANDS[(rest[0], rest[1])]
        return [f"aws {rest[0]} {rest[1]}: no parameter {t}" for t in rest[2:]
                if t.startswith("--") and t[2:].split("=", 1)[0] not in known]
    if rest[1] not in ops:
        return [f"aws {rest[0]} {rest[1]}: no such operation"]
    op = model.operation_model(ops[rest[1]])
    members = op.input_shape.members if op.input_shape is not None else {}
    params = {_cli_name(rest[0], rest[1], xform_name(m, "-")): m for m in members}
    problems = []
    positional = 0
    given: set[str] = set()
    tokens = rest[2:]
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--"):
            positional += 1
            continue
        name = token[2:].split("=", 1)[0]
        if name.startswith("no-") and name[3:] in params and members[params[name[3:]]].type_name == "boolean":
            given.add(params[name[3:]])
            continue
        if name in params:
            given.add(params[name])
            takes_value = members[params[name]].type_name != "boolean"
        elif f"--{name}" in AWS_PAGINATION:
            takes_value = True
        else:
            problems.append(f"aws {rest[0]} {rest[1]}: no parameter --{name}")
            takes_value = True
        if takes_value and "=" not in token:
            i += 1
            if name in params and members[params[name]].type_name == "list":
                while i < len(tokens) and not tokens[i].startswith("--"):
                    i += 1  # a list parameter takes every value up to the next option
    # a bare word is allowed only as the outfile of an operation that streams its output (invoke-endpoint)
    if positional > (1 if op.has_streaming_output else 0):
        problems.append(f"aws {rest[0]} {rest[1]}: unexpected positional argument")
    missing = [xform_name(m, "-") for m in (op.input_shape.required_members if op.input_shape else [])
               if m not in given]
    if missing and tokens and not _placeholder(" ".join(rest)):  # no parameter at all: the operation is named
        problems.append(f"aws {rest[0]} {rest[1]}: missing required --{', --'.join(missing)}")
    return problems


# -------------------------------------------------------------------------------------------------------- kubectl
KUBECTL_BUILTIN = {
    "pods", "pod", "po", "events", "event", "ev", "deploy", "deployment", "deployments", "configmap", "configmaps",
    "cm", "crd", "crds", "customresourcedefinitions", "customresourcedefinition", "namespaces", "namespace", "ns",
    "nodes", "node", "no", "services", "service", "svc", "secret", "secrets", "serviceaccount", "serviceaccounts",
    "sa", "daemonset", "daemonsets", "ds", "ingress", "ingresses", "ing", "job", "jobs", "all",
}
#: Kinds of other operators the docs name (External Secrets Operator, cert-manager).
KUBECTL_OTHER_CRDS = {"externalsecret", "externalsecrets", "secretstore", "secretstores", "certificate",
                      "certificates", "issuer", "issuers",
                      # the Inference Gateway's kind (v1alpha1): its CRD text is not public, so no CRD checks it
                      "inferencegatewayconfig", "inferencegatewayconfigs", "igwc"}
KUBECTL_VALUE_OPTS = {"-n", "--namespace", "-o", "--output", "-l", "--selector", "--field-selector", "-c",
                      "--container", "--tail", "--since", "-f", "--filename", "--for", "--timeout", "--context"}
KUBECTL_RESOURCE_VERBS = {"get", "describe", "delete", "edit", "wait", "label", "annotate", "patch"}


@functools.cache
def operator_crds(root: Path) -> dict[str, dict[str, Any]]:
    """Every name kubectl accepts for an operator CRD (kind, singular, plural, short names, plural.group) -> the
    status schema of its served storage version."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(root.glob("v*/*.yaml")):
        crd = yaml.safe_load(path.read_text())
        names, group = crd["spec"]["names"], crd["spec"]["group"]
        version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
        status = version["schema"]["openAPIV3Schema"].get("properties", {}).get("status", {})
        for name in {names["kind"].lower(), names.get("singular", ""), names["plural"],
                     f"{names['plural']}.{group}", *names.get("shortNames", [])} - {""}:
            merged = out.setdefault(name, {"properties": {}})
            merged["properties"].update(status.get("properties", {}))
    return out


def _jsonpath_problem(expr: str, status: dict[str, Any]) -> str | None:
    """The first `.status.` segment path of a jsonpath template that the status schema lacks, or None."""
    for path in re.findall(r"\.status((?:\.[A-Za-z0-9_]+)+)", expr):
        node = status
        for seg in path.strip(".").split("."):
            props = node.get("properties") or (node.get("items") or {}).get("properties") or {}
            if seg not in props:
                return f".status{path}: no {seg} in the CRD's status schema"
            node = props[seg]
    return None


def check_kubectl(argv: list[str], crds: dict[str, dict[str, Any]] | None) -> list[str]:
    args = argv[1:]
    positional: list[str] = []
    output = None
    i = 0
    while i < len(args):
        token = args[i]
        key = token.split("=", 1)[0]
        if key in KUBECTL_VALUE_OPTS:
            value = token.split("=", 1)[1] if "=" in token else (args[i + 1] if i + 1 < len(args) else "")
            if key in ("-o", "--output"):
                output = value
            i += 1 if "=" in token else 2
            continue
        if not token.startswith("-"):
            positional.append(token)
        i += 1
    if not positional:
        return ["kubectl: no verb"]
    verb, rest = positional[0], positional[1:]
    if verb not in KUBECTL_RESOURCE_VERBS | {"logs", "apply", "create", "explain", "rollout", "version",
                                               "config", "auth", "top", "exec", "port-forward", "api-resources"}:
        return [f"kubectl {verb}: not a kubectl verb"]
    targets: list[str] = []
    if verb in KUBECTL_RESOURCE_VERBS and rest:
        targets = [t.split("/", 1)[0] for t in rest[0].split(",")]
    elif verb == "logs" and rest and "/" in rest[0]:
        targets = [rest[0].split("/", 1)[0]]
    problems = []
    operator_kind = None
    for t in targets:
        if _placeholder(t) or t.lower() in KUBECTL_BUILTIN | KUBECTL_OTHER_CRDS:
            continue
        if crds is None:
            continue  # the operator's CRDs are not available: the caller skips these
        if t.lower() in crds:
            operator_kind = t.lower()
        else:
            problems.append(f"kubectl {verb} {t}: neither a built-in kind nor a kind or plural of the operator's CRDs")
    if output and output.startswith("jsonpath") and operator_kind and crds is not None:
        problem = _jsonpath_problem(output, crds[operator_kind])
        if problem:
            problems.append(f"kubectl {verb} {operator_kind}: {problem}")
    return problems


def names_operator_kind(argv: list[str]) -> bool:
    """Whether a kubectl command names a kind that is neither built in nor another operator's (needs the CRDs)."""
    words = [a for a in argv[2:] if not a.startswith("-")]
    return bool(words) and any(not _placeholder(t) and t.split("/", 1)[0].lower() not in KUBECTL_BUILTIN
                               | KUBECTL_OTHER_CRDS for t in words[0].split(","))


# ------------------------------------------------------------------------------------------------------ make, cdk
@functools.cache
def make_targets() -> tuple[set[str], set[str]]:
    """(targets, variables) of the Makefile."""
    text = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z0-9_-]*):", text, flags=re.M))
    variables = set(re.findall(r"^([A-Z][A-Z0-9_]*)\s*[?:]?=", text, flags=re.M))
    return targets, variables


def check_make(argv: list[str]) -> list[str]:
    targets, variables = make_targets()
    problems = []
    for token in argv[1:]:
        if "=" in token:
            if token.split("=", 1)[0] not in variables:
                problems.append(f"make: no variable {token.split('=', 1)[0]} in the Makefile")
        elif not token.startswith("-") and token not in targets:
            problems.append(f"make {token}: no such target")
    return problems


CDK_SUBCOMMANDS = {"synth", "deploy", "destroy", "bootstrap", "diff", "list", "ls", "doctor"}


@functools.cache
def cdk_flags(subcommand: str) -> frozenset[str]:
    """The flags `cdk <subcommand> --help` lists (global ones included)."""
    cli = REPO / "node_modules" / ".bin" / "cdk"
    done = subprocess.run([str(cli), subcommand, "--help"], capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={"PATH": str(REPO / "node_modules" / ".bin") + ":/usr/bin:/bin",
                               "CDK_DISABLE_CLI_TELEMETRY": "true", "HOME": "/tmp"})
    return frozenset(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", done.stdout + done.stderr))


def fresh_shell_problem(cmd: Command) -> str | None:
    """Why a CDK CLI command the page shows fails in a fresh shell, or None. ``cdk`` is not on a fresh shell's PATH,
    and ``npx cdk`` runs ``python3 app.py`` (cdk.json) with the system's Python, which has neither aws-cdk-lib nor the
    package: the make targets run both from the venv and node_modules. A command is shown when it is a line of a
    shell block or an inline span with more than its subcommand (``cdk destroy`` alone names the CDK step)."""
    if cmd.tool != "cdk" or (not cmd.in_block and len(cmd.argv) <= (3 if cmd.argv[0] == "npx" else 2)):
        return None
    return (f"{cmd.page}: `{cmd.text}` fails in a fresh shell (no cdk on PATH; npx cdk runs app.py with the "
            "system's python3): show the make target (make synth / diff / deploy / destroy CONFIG=...)")


def check_cdk(argv: list[str]) -> list[str]:
    args = argv[2:] if argv[0] == "npx" else argv[1:]
    if not args or args[0] not in CDK_SUBCOMMANDS:
        return [f"cdk {args[:1]}: not a cdk subcommand"]
    flags = cdk_flags(args[0])
    def known(flag: str) -> bool:  # yargs takes --no-<flag> for every boolean flag
        return flag in flags or (flag.startswith("--no-") and f"--{flag[5:]}" in flags)

    return [f"cdk {args[0]}: no flag {t.split('=', 1)[0]}" for t in args[1:]
            if t.startswith("-") and not known(t.split("=", 1)[0])]
