"""The kubectl layer facts: which published layer serves which Kubernetes version."""

from __future__ import annotations

import importlib.metadata

from hyperpod_inference.facts import kubectl


def test_the_default_layer_is_the_installed_dependency() -> None:
    # GIVEN the default layer WHEN its distribution is looked up THEN it is installed (pyproject's dependencies)
    assert importlib.metadata.version(kubectl.DEFAULT_LAYER.package)
    module = importlib.import_module(kubectl.DEFAULT_LAYER.module)
    assert hasattr(module, kubectl.DEFAULT_LAYER.class_name)


def test_a_layer_serves_its_own_minor_and_one_either_side() -> None:
    # GIVEN layer v33 THEN it serves 1.32-1.34 and nothing else
    assert kubectl.LAYERS[33].serves == ("1.32", "1.33", "1.34")
    assert kubectl.default_layer_serves("1.34") and not kubectl.default_layer_serves("1.35")


def test_layer_for_picks_the_exact_layer_then_the_nearest_serving_one() -> None:
    # GIVEN Kubernetes versions WHEN a layer is chosen THEN the exact minor wins, the edge uses a neighbour, and a
    # version no layer serves (or a malformed one) has none
    assert kubectl.layer_for("1.35").minor == 35
    assert kubectl.layer_for("1.30").minor == 31
    assert kubectl.layer_for("1.38").minor == 37
    assert kubectl.layer_for("1.29") is None
    assert kubectl.layer_for("1.39") is None
    assert kubectl.layer_for("v1.33") is None
