"""An endpoint's ``model`` section: exactly one of huggingface, s3, fsx, jumpstart."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import (
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..facts import production as prod_facts
from ..facts import rules
from ..facts import safety as safety_rules
from .base import (
    AbsolutePath,
    BucketName,
    CrdPaths,
    DnsSubdomain,
    JsmRoleArn,
    NoCrd,
    Strict,
    Text,
    _at,
    _literal_prefix,
    _safe_host_path,
    crd,
    crd_required,
)

JumpStartModelVersion = Annotated[str, StringConstraints(
    pattern=prod_facts.JUMPSTART_MODEL_VERSION, min_length=prod_facts.JUMPSTART_MODEL_VERSION_LENGTH[0],
    max_length=prod_facts.JUMPSTART_MODEL_VERSION_LENGTH[1])]


# ------------------------------------------------------------------------------------------------------------- models
class KubernetesSecretRef(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "name": NoCrd("not verbatim: the library derives "
                      "spec.modelSourceConfig.huggingFaceModel.tokenSecretRef.name from it"),
        "key": NoCrd("not verbatim: the library derives spec.modelSourceConfig.huggingFaceModel.tokenSecretRef.key "
                     "from it"),
    }
    name: DnsSubdomain
    """The Secret in the endpoint's namespace."""
    key: Annotated[str, StringConstraints(pattern=rules.SECRET_KEY, max_length=253)] = "token"
    """The key holding the token."""


class HfToken(Strict):
    """Exactly one: an existing Kubernetes Secret in the endpoint's namespace, or a Secrets Manager secret synced in."""

    crd_paths: ClassVar[CrdPaths] = {
        "secrets_manager_arn": NoCrd("synced into a Secret by an ExternalSecret; the resource gets tokenSecretRef"),
        "kms_key_arn": NoCrd("AWS side, not the custom resource (the token reader role's kms:Decrypt)"),
        "json_property": NoCrd("the ExternalSecret's remoteRef.property"),
        "kubernetes_secret": NoCrd("not verbatim: the library derives "
                                   "spec.modelSourceConfig.huggingFaceModel.tokenSecretRef from it"),
    }
    secrets_manager_arn: Annotated[str, StringConstraints(pattern=rules.SECRETS_MANAGER_ARN)] | None = None
    """A Secrets Manager secret synced into the namespace by External Secrets Operator: its full ARN (with the
    six-character suffix) grants exactly that secret; a partial ARN is granted with -?????? and warned."""
    kms_key_arn: Annotated[str, StringConstraints(pattern=rules.KMS_KEY_ARN)] | None = None  # the secret's CMK, if any
    """The secret's customer-managed key, if any (the reader role gets kms:Decrypt)."""
    json_property: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = None  # key in a JSON secret
    """The key inside a JSON secret that holds the token."""
    kubernetes_secret: KubernetesSecretRef | None = None
    """An existing Kubernetes Secret in the endpoint's namespace."""

    @model_validator(mode="after")
    def _one(self) -> HfToken:
        given = [n for n, v in (("secretsManagerArn", self.secrets_manager_arn),
                                ("kubernetesSecret", self.kubernetes_secret)) if v is not None]
        if len(given) != 1:
            raise PydanticCustomError("token", "give exactly one of secretsManagerArn, kubernetesSecret (got {n})",
                                      {"n": ", ".join(given) or "none"})
        if self.kubernetes_secret is not None and (self.kms_key_arn or self.json_property):
            raise PydanticCustomError("token", "kmsKeyArn and jsonProperty go with secretsManagerArn")
        return self





class HuggingFaceSource(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "token": NoCrd("not verbatim: the library derives spec.modelSourceConfig.huggingFaceModel.tokenSecretRef "
                       "from it"),
    }
    model_id: Annotated[str, StringConstraints(pattern=rules.HF_MODEL_ID)] = Field(
        **_at("spec.modelSourceConfig.huggingFaceModel.modelId"))
    """The Hub model ID, e.g. Qwen/Qwen2.5-7B-Instruct."""
    commit_sha: Annotated[str, StringConstraints(pattern=rules.HF_COMMIT_SHA)] | None = Field(
        default=None, alias="commitSHA", **_at("spec.modelSourceConfig.huggingFaceModel.commitSHA"))
    """The 40-character commit to pin (quote it); omitted = follow main (warned)."""
    token: HfToken | None = None
    """The token for a gated or private model, kept out of every template and manifest."""
    prefetch: bool = Field(True, **_at("spec.modelSourceConfig.prefetchEnabled"))
    """Let the operator download the weights before the worker starts."""


class S3Source(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "kms_key_arn": NoCrd("AWS side, not the custom resource (the model reader's kms:Decrypt)"),
    }
    bucket: BucketName = Field(**_at("spec.modelSourceConfig.s3Storage.bucketName"))
    """The bucket holding the weights."""
    prefix: Annotated[str, StringConstraints(pattern=rules.S3_PREFIX, max_length=1024)] = Field(
        "", **_at("spec.modelSourceConfig.modelLocation"))
    """The folder of the weights in the bucket."""
    region: Annotated[str, StringConstraints(pattern=rules.REGION)] | None = Field(
        None, **_at("spec.modelSourceConfig.s3Storage.region"))
    """The bucket's region; default the stack's."""
    kms_key_arn: Annotated[str, StringConstraints(pattern=rules.KMS_KEY_ARN)] | None = None
    """The bucket's customer-managed key, if any (the reader gets kms:Decrypt)."""
    prefetch: bool | None = crd("spec.modelSourceConfig.prefetchEnabled")
    """Let the operator copy the weights before the worker starts."""

    _literal_prefix = field_validator("prefix", mode="before")(_literal_prefix)

    @property
    def folder_prefix(self) -> str:
        """The prefix as a folder (ends in ``/``; empty = the whole bucket): what IAM grants and the agent lists.
        ``modelLocation`` keeps :attr:`prefix` as written."""
        return safety_rules.s3_folder_prefix(self.prefix)


class FsxSource(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "node_path": NoCrd("the NVMe agent's source folder (weightCache.mode: daemonset)"),
    }
    file_system_id: Annotated[str, StringConstraints(pattern=rules.FSX_ID)] = Field(
        **_at("spec.modelSourceConfig.fsxStorage.fileSystemId"))
    """The FSx for Lustre file system (fs-...)."""
    path: AbsolutePath = Field("/", **_at("spec.modelSourceConfig.modelLocation"))
    """The folder of the weights on the file system."""
    node_path: AbsolutePath | None = None  # where the file system is mounted on the nodes (daemonset cache source)
    """Where the file system is mounted on the nodes (daemonset cache source)."""
    prefetch: bool | None = crd("spec.modelSourceConfig.prefetchEnabled")
    """Let the operator copy the weights before the worker starts."""

    _safe_node_path = field_validator("node_path")(_safe_host_path)


class AdditionalConfig(Strict):
    name: Text = crd_required("name")
    """Setting name."""
    value: Annotated[str, StringConstraints(max_length=1024)] = crd_required("value")
    """Setting value."""


class JumpStartSource(Strict):
    model_id: Annotated[str, StringConstraints(pattern=prod_facts.JSM_MODEL_ID, max_length=63)] = Field(
        **_at("spec.model.modelId"))
    """The JumpStart model ID."""
    accept_eula: bool = Field(False, **_at("spec.model.acceptEula"))
    """Accept the model's end-user licence."""
    model_hub_name: Annotated[str, StringConstraints(pattern=prod_facts.JSM_MODEL_ID, max_length=63)] | None = Field(
        None, **_at("spec.model.modelHubName"))
    """A private model hub to take the model from."""
    model_version: JumpStartModelVersion | None = crd(
        "spec.model.modelVersion", description="A version such as 1.0.0 (stricter than the CRD, whose pattern leaves "
                                               "the dots unescaped).")
    additional_configs: Annotated[list[AdditionalConfig], Field(max_length=prod_facts.ADDITIONAL_CONFIGS_MAX)] | None = \
        crd("spec.model.additionalConfigs")
    """Extra name/value settings passed to JumpStart."""
    gated_model_download_role: JsmRoleArn | None = crd("spec.model.gatedModelDownloadRole")
    """The role that downloads a gated model."""


class ModelSource(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "huggingface": NoCrd("not verbatim: the library derives spec.modelSourceConfig.huggingFaceModel from it"),
        "s3": NoCrd("not verbatim: the library derives spec.modelSourceConfig.s3Storage from it"),
        "fsx": NoCrd("not verbatim: the library derives spec.modelSourceConfig.fsxStorage from it"),
        "jumpstart": NoCrd("not verbatim: the library derives spec.model from it"),
    }
    huggingface: HuggingFaceSource | None = None
    """Weights from the Hugging Face Hub."""
    s3: S3Source | None = None
    """Weights from an S3 prefix."""
    fsx: FsxSource | None = None
    """Weights from FSx for Lustre."""
    jumpstart: JumpStartSource | None = None
    """A SageMaker JumpStart model (kind: JumpStartModel)."""

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelSource:
        given = [n for n in ("huggingface", "s3", "fsx", "jumpstart") if getattr(self, n) is not None]
        if len(given) != 1:
            raise PydanticCustomError("source", "give exactly one model source of huggingface, s3, fsx, jumpstart (got {n})",
                                      {"n": ", ".join(given) or "none"})
        return self

    @property
    def kind(self) -> str:
        return next(n for n in ("huggingface", "s3", "fsx", "jumpstart") if getattr(self, n) is not None)


