"""The ``model`` family of ``doctor`` (check IDs ``model.*``): what an endpoint's model needs before the deploy.

Empty for now: the model checks come here, each registered on :data:`FAMILY` with ``@FAMILY.check("model.<check>",
summary, resource)`` as in the other families, and the runner lists this family already (so they run in its place,
after ``domain``, and ``--only model`` selects them). Until one is registered, ``--only model`` names no check (exit 2).
"""

from __future__ import annotations

from .base import Family

FAMILY = Family("model", "what an endpoint's model needs before the deploy")
