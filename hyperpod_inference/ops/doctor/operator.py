"""The ``operator`` family of ``doctor``: the HyperPod inference operator as ``operator.install`` wants it. Its EKS
add-on absent (the stack installs it) or present at a compatible version (``install: existing``), the add-ons it
depends on, its CRDs, and the name of the bucket it writes TLS certificates to.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...facts import gateway as gateway_facts
from ...facts import naming
from ...facts import operator as operator_facts
from ...facts.versions import Version
from .base import FAIL, PASS, WARN, CheckFn, Context, Family, Result, bucket_result, each

FAMILY = Family("operator", "the operator's add-on, its dependencies, its CRDs and its TLS bucket")

GATEWAY_CRD = f"{gateway_facts.PLURAL}.{operator_facts.API_GROUP}"
OPERATOR_CRDS = (f"inferenceendpointconfigs.{operator_facts.API_GROUP}", f"jumpstartmodels.{operator_facts.API_GROUP}")


def _addon_state(addon: dict) -> str:
    return f"{addon.get('addonVersion')} ({addon.get('status')})"


@FAMILY.check("operator.addon", "per operator.install, the operator add-on is absent or present at a compatible "
              "version", lambda c: f"add-on {operator_facts.OPERATOR_ADDON_NAME} on {c.eks_name}")
def check_operator_addon(ctx: Context) -> Iterator[Result]:
    name = operator_facts.OPERATOR_ADDON_NAME
    resource = f"add-on {name} on {ctx.eks_name}"
    op = ctx.config.operator
    found = ctx.addon(name)
    wanted = op.addon_version or operator_facts.release(op.version).addon_version
    if op.install == "existing":
        minimum = operator_facts.release(op.version).addon_version
        if found is None:
            yield Result("operator.addon", FAIL, resource, "install: existing, but the add-on is not installed",
                         "set operator.install: addon (the stack installs it)")
        elif Version(found.get("addonVersion", "v0")) < Version(minimum):
            yield Result("operator.addon", FAIL, resource,
                         f"{_addon_state(found)} ships an operator older than operator.version {op.version} "
                         f"(add-on {minimum})", f"aws eks update-addon --cluster-name {ctx.eks_name} --addon-name "
                         f"{name} --addon-version {minimum}; or set operator.version")
        elif found.get("status") != "ACTIVE":
            yield Result("operator.addon", WARN, resource,
                         f"{_addon_state(found)}: the add-on reports ACTIVE only once its controller runs, which "
                         "needs a node with room for its pods", f"kubectl get pods -n {operator_facts.OPERATOR_NAMESPACE}")
        else:
            yield Result("operator.addon", PASS, resource, f"installed: {_addon_state(found)}")
        return
    if found is None:
        yield Result("operator.addon", PASS, resource, f"absent: the stack installs the operator ({op.install}, "
                     f"{wanted if op.install == 'addon' else op.version})")
    elif ctx.owned_by_stack(found.get("tags")):
        yield Result("operator.addon", PASS, resource, f"installed by stack {ctx.stack_name}: {_addon_state(found)}")
    else:
        yield Result("operator.addon", FAIL, resource,
                     f"already installed ({_addon_state(found)}) outside stack {ctx.stack_name}: install: "
                     f"{op.install} would install the operator twice",
                     "set operator.install: existing and operator.executionRoleArn (its role)")


def _dependency_check(dependency: str) -> CheckFn:
    check_id = f"operator.dependency.{dependency}"

    def run(ctx: Context) -> Iterator[Result]:
        resource = f"add-on {dependency} on {ctx.eks_name}"
        minimum = operator_facts.DEPENDENCY_ADDON_VERSIONS[dependency]
        found = ctx.addon(dependency)
        if ctx.config.operator.dependencies == "create":
            if found is None:
                yield Result(check_id, PASS, resource, f"absent: the stack creates it ({minimum})")
            elif ctx.owned_by_stack(found.get("tags")):
                yield Result(check_id, PASS, resource, f"created by stack {ctx.stack_name}: {_addon_state(found)}")
            else:
                yield Result(check_id, FAIL, resource,
                             f"already installed ({_addon_state(found)}): dependencies: create would fail on it",
                             "set operator.dependencies: existing")
            return
        create = (f"aws eks create-addon --cluster-name {ctx.eks_name} --addon-name {dependency} --addon-version "
                  f"{minimum}")
        if found is None:
            yield Result(check_id, FAIL, resource, "not installed, and dependencies: existing creates nothing",
                         f"{create}; or set operator.dependencies: create")
        elif Version(found.get("addonVersion", "v0")) < Version(minimum):
            yield Result(check_id, FAIL, resource, f"{_addon_state(found)} is below the operator's minimum {minimum}",
                         f"aws eks update-addon --cluster-name {ctx.eks_name} --addon-name {dependency} "
                         f"--addon-version {minimum}")
        elif found.get("status") not in ("ACTIVE", "UPDATING"):
            yield Result(check_id, WARN, resource, f"{_addon_state(found)}",
                         f"aws eks describe-addon --cluster-name {ctx.eks_name} --addon-name {dependency}")
        else:
            yield Result(check_id, PASS, resource, f"installed: {_addon_state(found)} (minimum {minimum})")
    return run


for _dependency in operator_facts.DEPENDENCY_ADDON_VERSIONS:
    FAMILY.add(f"operator.dependency.{_dependency}", f"the {_dependency} add-on is present at its minimum version or "
               "will be created", lambda c, d=_dependency: f"add-on {d} on {c.eks_name}", _dependency_check(_dependency))


@FAMILY.check("operator.crds", "the operator's CRDs are present (install: existing) or come with the stack's install",
              lambda c: f"CRDs {', '.join(OPERATOR_CRDS)}")
def check_crds(ctx: Context) -> Iterator[Result]:
    install = ctx.config.operator.install
    addon = ctx.addon(operator_facts.OPERATOR_ADDON_NAME) if install != "existing" else None
    ours = addon is not None and ctx.owned_by_stack(addon.get("tags"))
    for name in OPERATOR_CRDS:
        resource = f"CustomResourceDefinition {name}"
        served = ctx.crd_versions(name)
        if install == "existing":
            if served is None:
                yield Result("operator.crds", FAIL, resource, "absent: install: existing needs an installed operator",
                             "set operator.install: addon")
            elif "v1" not in served:
                yield Result("operator.crds", FAIL, resource, f"serves {served}, not v1", "upgrade the operator")
            else:
                yield Result("operator.crds", PASS, resource, f"serves {', '.join(served)}")
        elif served is None or ours:
            yield Result("operator.crds", PASS, resource, "absent: the stack's install brings it" if served is None
                         else f"installed by stack {ctx.stack_name}'s operator")
        else:
            yield Result("operator.crds", FAIL, resource,
                         f"present (serves {', '.join(served)}) though the stack installs the operator: another "
                         "install (a Helm release?) owns it", "set operator.install: existing")


@FAMILY.check("operator.gateway", "with gateways, the add-on installs the Inference Gateway (from "
              f"{gateway_facts.MIN_ADDON_VERSION}) and its CRD is served or comes with the stack's add-on",
              lambda c: f"add-on {operator_facts.OPERATOR_ADDON_NAME} and CRD {GATEWAY_CRD}")
def check_gateway(ctx: Context) -> Iterator[Result]:
    """Runs only when the config needs the gateway controller (a gateway the stack creates, or an endpoint opted
    into one): ``install: existing`` needs an installed add-on of at least the gateway's version with the gateway
    enabled (its CRD served); the stack's own install brings both."""
    if not ctx.plan().stack.operator.gateway_controller:
        return
    existing = ctx.config.operator.install == "existing"
    name = operator_facts.OPERATOR_ADDON_NAME
    minimum = gateway_facts.MIN_ADDON_VERSION
    addon_resource, crd_resource = f"add-on {name} on {ctx.eks_name}", f"CustomResourceDefinition {GATEWAY_CRD}"
    update = (f"aws eks update-addon --cluster-name {ctx.eks_name} --addon-name {name} --addon-version {minimum} "
              "--configuration-values <the add-on's configuration with inferenceGateway.enabled: true>")

    def addon() -> Result:
        resource = addon_resource
        found = ctx.addon(name)
        if not existing:
            wanted = ctx.config.operator.addon_version or operator_facts.release(ctx.config.operator.version).addon_version
            return Result("operator.gateway", PASS, resource, f"the stack installs add-on {wanted} with the gateway "
                          "enabled" + (f" (installed now: {_addon_state(found)})" if found else ""))
        if found is None:
            return Result("operator.gateway", FAIL, resource, "install: existing, but the add-on is not installed",
                          "set operator.install: addon (the stack installs it with the gateway)")
        if Version(found.get("addonVersion", "v0")) < Version(minimum):
            return Result("operator.gateway", FAIL, resource, f"{_addon_state(found)} has no Inference Gateway "
                          f"(from {minimum}); delete every InferenceGatewayConfig before the update", update)
        return Result("operator.gateway", PASS, resource, f"installed: {_addon_state(found)} (gateway from {minimum})")

    def crd() -> Result:
        resource = crd_resource
        served = ctx.crd_versions(GATEWAY_CRD)
        if served is None:
            if existing:
                return Result("operator.gateway", FAIL, resource, "absent: the installed add-on's configuration does "
                              "not enable the gateway (inferenceGateway.enabled: true)", update)
            return Result("operator.gateway", PASS, resource, "absent: the stack's add-on brings it")
        if gateway_facts.CRD_VERSION not in served:
            return Result("operator.gateway", FAIL, resource, f"serves {', '.join(served)}, not "
                          f"{gateway_facts.CRD_VERSION}", update)
        return Result("operator.gateway", PASS, resource, f"serves {', '.join(served)}")

    yield from each("operator.gateway", addon_resource, addon)
    yield from each("operator.gateway", crd_resource, crd)


@FAMILY.check("operator.tls-bucket", "the TLS bucket name is free, or the imported bucket exists",
              lambda c: "TLS bucket")
def check_tls_bucket(ctx: Context) -> Iterator[Result]:
    op = ctx.config.operator
    name = op.tls_bucket_name or naming.tls_bucket_name(ctx.stack_name, ctx.account, ctx.region)
    yield from each("operator.tls-bucket", f"S3 bucket {name}", lambda: bucket_result(
        ctx, "operator.tls-bucket", name, imported=bool(op.tls_bucket_name), key="operator.tlsBucketName"))
