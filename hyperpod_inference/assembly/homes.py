"""Where the pieces of one ``HyperPodInference`` live: the enclosing stack, or the nested stack of a namespace (and
``stackGroup``) with ``stackLayout: perNamespace``. The plan names a stack by its scope key ('' for the enclosing
stack, else the nested stack's path below the construct); this maps the keys onto constructs."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from ..plan.context import nested_stack_id


def way_out(namespace: str, group: str | None) -> str:
    what = f"namespace {namespace}" + (f", stackGroup {group}" if group else "")
    return (f"give some endpoints of {what} another stackGroup (endpoints[].stackGroup): each namespace and group is "
            "a nested stack of its own")


class Homes:
    """The stacks of ``owner`` by scope key; nested stacks are created on first use.

    ``nested_stacks``: (namespace, stackGroup) -> the nested stack holding its endpoints."""

    def __init__(self, owner: Construct, name_scope: str) -> None:
        self.owner = owner
        self.stack = cdk.Stack.of(owner)
        self.name_scope = name_scope
        self.nested_stacks: dict[tuple[str, str | None], cdk.NestedStack] = {}
        self._homes: dict[str, Construct] = {"": owner}
        self._scope_keys: dict[Construct, str] = {}

    def nested_stack(self, namespace: str, group: str | None) -> cdk.NestedStack:
        key = (namespace, group)
        nested = self.nested_stacks.get(key)
        if nested is None:
            nested = cdk.NestedStack(self.owner, nested_stack_id(namespace, group), description=(
                f"SageMaker HyperPod inference: namespace {namespace}" + (f", stack group {group}" if group else "")
                + f" of {self.name_scope} (hyperpod-inference-cdk)"))
            self.nested_stacks[key] = nested
            self._homes[nested_stack_id(namespace, group)] = nested
        return nested

    def namespace_home(self, namespace: str, scope_key: str) -> Construct:
        """The construct of a namespace's home (``plan.context.namespace_home``): this construct, or the namespace's own
        nested stack, created for it when every endpoint of the namespace has a ``stackGroup``."""
        return self.owner if scope_key == "" else self.nested_stack(namespace, None)

    def scope_key(self, scope: Construct) -> str:
        """Which stack of the owner ``scope`` is in: '' for the enclosing stack, else the stack's path below the
        owner. Shared per-namespace objects (token syncs, warm DaemonSets) carry it in their names, so two stacks
        never apply objects of the same name."""
        known = self._scope_keys.get(scope)
        if known is None:
            stack = cdk.Stack.of(scope)
            path, mine = stack.node.path, self.owner.node.path + "/"
            known = "" if stack is self.stack else path[len(mine):] if path.startswith(mine) else path
            self._scope_keys[scope] = known
            self._homes.setdefault(known, self.owner if stack is self.stack else stack)
        return known

    def home(self, scope_key: str) -> Construct:
        """Where the pieces shared by the endpoints of one stack live (token syncs, warm DaemonSets): this construct
        for the enclosing stack, else the stack itself. It depends on the stack only, never on which endpoint came
        first."""
        return self._homes[scope_key]

    def stack_label(self, stack: cdk.Stack) -> str:
        """Which part of the config a stack holds: ``namespace team-a (stackGroup g)`` for a nested stack, ``stack
        <name>`` otherwise."""
        for (ns, group), nested in self.nested_stacks.items():
            if nested is stack:
                return f"namespace {ns}" + (f" (stackGroup {group})" if group else "")
        return f"stack {stack.stack_name}"

    def template_labels(self) -> dict[str, tuple[str, str]]:
        """Nested template file name -> (the namespace and group it holds, how to split it): for
        :func:`~hyperpod_inference.assembly.limits.template_size_problems`."""
        return {nested.template_file: (self.stack_label(nested), way_out(ns, group))
                for (ns, group), nested in self.nested_stacks.items()}
