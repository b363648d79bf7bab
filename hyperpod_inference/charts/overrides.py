"""``specOverrides``: an RFC 7386 JSON merge patch applied last to a custom resource's ``spec``.

It reaches fields of newer operators before the library models them (sidecar resources, pod template annotations,
tolerations, the inference gateway). The config refuses a patch on any path the library writes or models
(``facts.production.override_conflicts``), so an override never silently replaces what another key produced.
"""

from __future__ import annotations

import copy
from typing import Any


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 section 2: objects merge recursively, ``null`` deletes, anything else (arrays too) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def apply_spec_overrides(resource: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The resource with ``overrides`` merged into its spec (a new dict; the input is left as it was)."""
    if not overrides:
        return resource
    out = dict(resource)
    out["spec"] = merge_patch(resource.get("spec", {}), overrides)
    return out
