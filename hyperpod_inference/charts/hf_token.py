"""The Hugging Face token: never in a template or manifest.

``token.kubernetesSecret`` references a Secret that already exists in the endpoint's namespace.
``token.secretsManagerArn`` syncs the secret into the endpoint's namespace only, with External Secrets Operator
(``external-secrets.io/v1``): a namespace-scoped ``SecretStore`` whose service account assumes an IRSA role that can
read exactly that one secret, and an ``ExternalSecret`` that writes the Kubernetes Secret. Manifests carry only the
secret's ARN and names. Endpoints of one namespace that name the same secret (and JSON property) share one sync:
its objects are named ``<stack scope>-hf-token-<hash>`` after the stack and what they read, not after an endpoint.
"""

from __future__ import annotations

from typing import Any

from ..config.models import Endpoint
from ..facts.naming import MANAGED_BY
from ..plan.endpoints import TOKEN_KEY, token_names

ESO_API = "external-secrets.io/v1"


def external_secret_objects(endpoint: Endpoint, *, region: str, role_arn: str, scope_key: str = "",
                            name_scope: str = "") -> list[dict[str, Any]]:
    """ServiceAccount (IRSA), SecretStore and ExternalSecret for a Secrets Manager token; [] otherwise.

    Plain objects: cdk8s-plus has no kind for the External Secrets CRDs, and its ServiceAccount always writes
    ``automountServiceAccountToken`` (false by default), which this ServiceAccount leaves to the cluster's default."""
    hf = endpoint.model.huggingface
    if hf is None or hf.token is None or hf.token.secrets_manager_arn is None:
        return []
    names = token_names(endpoint, scope_key, name_scope)
    ns = endpoint.namespace
    remote: dict[str, Any] = {"key": hf.token.secrets_manager_arn}
    if hf.token.json_property:
        remote["property"] = hf.token.json_property
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": names["service_account"], "namespace": ns, "labels": dict(MANAGED_BY),
                      "annotations": {"eks.amazonaws.com/role-arn": role_arn}}},
        {"apiVersion": ESO_API, "kind": "SecretStore",
         "metadata": {"name": names["store"], "namespace": ns, "labels": dict(MANAGED_BY)},
         "spec": {"provider": {"aws": {"service": "SecretsManager", "region": region,
                                       "auth": {"jwt": {"serviceAccountRef": {"name": names["service_account"]}}}}}}},
        {"apiVersion": ESO_API, "kind": "ExternalSecret",
         "metadata": {"name": names["external_secret"], "namespace": ns, "labels": dict(MANAGED_BY)},
         "spec": {"refreshInterval": "1h",
                  "secretStoreRef": {"name": names["store"], "kind": "SecretStore"},
                  "target": {"name": names["secret"], "creationPolicy": "Owner", "deletionPolicy": "Delete"},
                  "data": [{"secretKey": TOKEN_KEY, "remoteRef": remote}]}},
    ]
