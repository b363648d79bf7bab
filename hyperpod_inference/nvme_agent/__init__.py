"""The NVMe agent: materializes model weights on node-local NVMe (DaemonSet ``warm`` mode, init-container ``ensure``).

This package is self-contained (stdlib + botocore + huggingface_hub, imported lazily; relative imports only, flat,
only ``.py`` files) so that it can be shipped as a ConfigMap and
run as ``python -m nvme_agent``.
"""

from __future__ import annotations

import os

from .spec import SpecError, model_relative_dir, normalize_spec, required_modules, revision_label, source_key

__all__ = [
    "SpecError",
    "agent_source_files",
    "model_relative_dir",
    "normalize_spec",
    "required_modules",
    "revision_label",
    "source_key",
]

def agent_source_files() -> dict[str, str]:
    """File name -> content of every ``.py`` file of the package (valid ConfigMap keys), for the agent ConfigMap."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = {}
    for name in sorted(os.listdir(here)):
        if name.endswith(".py") and os.path.isfile(os.path.join(here, name)):
            with open(os.path.join(here, name), encoding="utf-8") as fh:
                out[name] = fh.read()
    return out
