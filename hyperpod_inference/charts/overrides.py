"""``specOverrides``: an RFC 7386 JSON merge patch applied last to a custom resource's ``spec``.

It reaches fields of newer operators before the library models them (sidecar resources, pod template annotations,
tolerations, the inference gateway). The config refuses a patch on any path the library writes or models
(``facts.production.override_conflicts``), so an override never silently replaces what another key produced.
"""

from __future__ import annotations

from typing import Any

from ..facts.production import merge_patch

__all__ = ["apply_spec_overrides", "merge_patch"]


def apply_spec_overrides(resource: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The resource with ``overrides`` merged into its spec (a new dict; the input is left as it was)."""
    if not overrides:
        return resource
    out = dict(resource)
    out["spec"] = merge_patch(resource.get("spec", {}), overrides)
    return out
