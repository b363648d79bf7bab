"""facts/production.py: the RFC 7386 merge patch used for specOverrides and addonConfigurationOverrides."""

from __future__ import annotations

from hyperpod_inference.facts.production import merge_patch


class Opaque:
    """A value that refuses to be deep-copied, as a synth-time CDK token does (it recurses without end)."""

    def __deepcopy__(self, memo):
        raise RecursionError("deep-copied")


def test_merge_patch_keeps_values_it_does_not_merge_as_they_are_instead_of_deep_copying_them():
    # GIVEN a target holding an opaque value (a lazy CDK token) beside the keys a patch changes
    token = Opaque()
    target = {"enable": token, "keda": {"enabled": True, "list": [{"a": 1}]}}
    # WHEN a patch adds a nested key
    merged = merge_patch(target, {"keda": {"resources": {"limits": {"memory": "1Gi"}}}})
    # THEN the opaque value is carried over unchanged and the patch is merged
    assert merged["enable"] is token
    assert merged["keda"] == {"enabled": True, "list": [{"a": 1}], "resources": {"limits": {"memory": "1Gi"}}}
    # AND neither input is changed: the merged objects and arrays are copies
    merged["keda"]["list"][0]["a"] = 2
    assert target == {"enable": token, "keda": {"enabled": True, "list": [{"a": 1}]}}
