"""The NVMe agent: materializes model weights on node-local NVMe (DaemonSet ``warm`` mode, init-container ``ensure``).

This package is self-contained (stdlib + botocore + huggingface_hub, imported lazily; relative imports only, flat,
only ``.py`` files) so that it can be shipped as a ConfigMap and
run as ``python -m nvme_agent``.
"""

from __future__ import annotations

import os

from .spec import SpecError, model_relative_dir, normalize_spec, required_modules, revision_label, source_key

__all__ = [
    "PROCESS_ENV",
    "SpecError",
    "agent_source_files",
    "model_relative_dir",
    "normalize_spec",
    "required_modules",
    "revision_label",
    "source_key",
]

# The environment the agent's containers run it with (the chart sets it; the benchmark runs the agent the same way).
# The agent is a short-lived process, and its start (imports, decoding botocore's S3 model and endpoint data) touches
# ~13,000 fresh 4 KiB pages, a page fault each. With Python's objects in glibc's heap
# (PYTHONMALLOC=malloc) and that heap advised for transparent huge pages (glibc.malloc.hugetlb=1, glibc 2.35+; older
# glibc and other libcs ignore it), a start takes ~5,800 faults instead (BENCHMARKS.md).
PROCESS_ENV = {"PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}


def agent_source_files() -> dict[str, str]:
    """File name -> content of every ``.py`` file of the package (valid ConfigMap keys), for the agent ConfigMap."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = {}
    for name in sorted(os.listdir(here)):
        if name.endswith(".py") and os.path.isfile(os.path.join(here, name)):
            with open(os.path.join(here, name), encoding="utf-8") as fh:
                out[name] = fh.read()
    return out
