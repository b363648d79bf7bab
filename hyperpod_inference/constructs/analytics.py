"""Captured data you can query: a Glue database and tables over the capture tiers, an Athena workgroup and ready
queries (named queries and prepared statements), and the grant to run them.

* tier 2 (ALB access logs): ``alb_access_logs``, the RegexSerDe over every documented field; partitions ``hash``
  (injected) and ``day`` (projected), laid out as ``<prefix>/<hash>/alb/AWSLogs/<account>/elasticloadbalancing/
  <region>/yyyy/mm/dd/``;
* tier 1 (SageMaker endpoint capture): ``sme_capture``, the JSON SerDe over SageMaker Data Capture's records;
  partitions ``hash``, ``endpoint``, ``variant`` (injected) and ``hour`` (projected), under ``<prefix>/<hash>/sme/
  <endpoint>/<variant>/yyyy/mm/dd/hh/`` (the layout below ``sme/`` is inferred from SageMaker's);
* tier 3 (model pod) has no table: its object format is not documented.

The tables only read, so an imported capture bucket gets them too. Query results go to the capture bucket under
their own prefix (``athena-results/``); on a bucket this stack policies a lifecycle rule expires them, on an imported
one :attr:`CaptureAnalytics.results_lifecycle_to_add` says what its owner must add (the bucket is never re-policied).
Definitions and query text: ``facts/analytics.py``.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_athena as athena
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..facts import analytics as facts
from ..facts import naming
from .data_capture import DataCaptureStorage
from .lazy import is_unresolved, literal_stack_name
from .nag import acknowledge_resource_wildcard

ATHENA_ENGINE_VERSION = "Athena engine version 3"
_ABORT_INCOMPLETE_MULTIPART_DAYS = 1

_ATHENA_ACTIONS = [
    "athena:GetWorkGroup", "athena:StartQueryExecution", "athena:StopQueryExecution", "athena:GetQueryExecution",
    "athena:BatchGetQueryExecution", "athena:ListQueryExecutions", "athena:GetQueryResults",
    "athena:GetQueryRuntimeStatistics", "athena:GetNamedQuery", "athena:BatchGetNamedQuery", "athena:ListNamedQueries",
    "athena:GetPreparedStatement", "athena:BatchGetPreparedStatement", "athena:ListPreparedStatements",
]
_GLUE_ACTIONS = ["glue:GetDatabase", "glue:GetTable", "glue:GetTables", "glue:GetPartition", "glue:GetPartitions",
                 "glue:BatchGetPartition"]
_RESULTS_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]


class CaptureAnalytics(Construct):
    """Glue tables, an Athena workgroup and ready queries over what ``capture`` stores.

    :param capture: the capture storage (created or imported bucket and key).
    :param bytes_scanned_cutoff_mb: the most a query may scan, in MB (10^6 bytes); at least 10 (Athena's minimum).
        Default: 1000.
    :param results_retention_days: days until query results expire (lifecycle rule on a bucket this stack
        policies). Default: 30.
    :param name_base: ``<base>`` of the workgroup and database names. Default: the capture names' base (the stack
        name), as :class:`DataCaptureStorage` computes it.
    """

    database_name: str
    """The Glue database (``<base>_capture``)."""
    work_group_name: str
    """The Athena workgroup (``<base>-capture``)."""
    results_location: str
    """``s3://<bucket>/athena-results/``: where the workgroup writes query results."""
    table_names: dict[str, str]
    """The tables, by tier (``loadBalancer``, ``sagemakerEndpoint``)."""
    results_lifecycle_to_add: str | None
    """For an imported bucket: the lifecycle rule its owner must add to expire query results; else None."""

    def __init__(self, scope: Construct, construct_id: str, *, capture: DataCaptureStorage,
                 bytes_scanned_cutoff_mb: int = 1000, results_retention_days: int = 30,
                 name_base: str | None = None) -> None:
        super().__init__(scope, construct_id)
        self._validate(bytes_scanned_cutoff_mb, results_retention_days, capture.prefix)
        stack = Stack.of(self)
        self._stack = stack
        self.capture = capture
        base = name_base or naming.capture_name_base(literal_stack_name(stack), stack.account, stack.region)
        self.database_name = naming.capture_database_name(base)
        self.work_group_name = naming.capture_workgroup_name(base)
        self.results_prefix = facts.RESULTS_PREFIX
        self.results_location = f"s3://{capture.bucket_name}/{self.results_prefix}/"
        self._capture_root = f"s3://{capture.bucket_name}/{capture.prefix}"

        self.database = glue.CfnDatabase(
            self, "Database", catalog_id=stack.account,
            database_input=glue.CfnDatabase.DatabaseInputProperty(
                name=self.database_name,
                description=f"HyperPod inference data capture under {self._capture_root}/ (hyperpod-inference-cdk)"))
        range_days = capture.retention_days
        self.alb_table = self._table(
            "AlbAccessLogsTable", facts.ALB_TABLE, facts.ALB_COLUMNS, facts.ALB_PARTITIONS,
            facts.alb_projection(facts.alb_location_template(self._capture_root, stack.account, stack.region),
                                 range_days),
            serde=glue.CfnTable.SerdeInfoProperty(
                serialization_library=facts.ALB_SERDE,
                parameters={"serialization.format": "1", "input.regex": facts.ALB_REGEX}),
            description="Tier 2: ALB access logs (every documented field); give hash and a day range")
        self.sme_table = self._table(
            "SageMakerCaptureTable", facts.SME_TABLE, facts.SME_COLUMNS, facts.SME_PARTITIONS,
            facts.sme_projection(facts.sme_location_template(self._capture_root), range_days),
            serde=glue.CfnTable.SerdeInfoProperty(serialization_library=facts.JSON_SERDE,
                                                  parameters={"case.insensitive": "TRUE"}),
            description="Tier 1: SageMaker Data Capture JSON lines; give hash, endpoint, variant and an hour range "
                        "(layout below sme/ inferred from SageMaker's)")
        self.table_names = {"loadBalancer": facts.ALB_TABLE, "sagemakerEndpoint": facts.SME_TABLE}

        self.work_group = athena.CfnWorkGroup(
            self, "WorkGroup", name=self.work_group_name, state="ENABLED",
            description=f"Queries over HyperPod inference data capture ({self.database_name})",
            # The stack owns the workgroup: delete it with its query history on stack delete.
            recursive_delete_option=True,
            work_group_configuration=athena.CfnWorkGroup.WorkGroupConfigurationProperty(
                enforce_work_group_configuration=True,
                publish_cloud_watch_metrics_enabled=True,
                bytes_scanned_cutoff_per_query=bytes_scanned_cutoff_mb * facts.BYTES_PER_MB,
                engine_version=athena.CfnWorkGroup.EngineVersionProperty(
                    selected_engine_version=ATHENA_ENGINE_VERSION),
                result_configuration=athena.CfnWorkGroup.ResultConfigurationProperty(
                    output_location=self.results_location,
                    expected_bucket_owner=stack.account,
                    encryption_configuration=self._results_encryption())))

        self.named_queries: dict[str, athena.CfnNamedQuery] = {}
        self.prepared_statements: dict[str, athena.CfnPreparedStatement] = {}
        tables = {facts.ALB_TABLE: self.alb_table, facts.SME_TABLE: self.sme_table}
        for query in facts.QUERIES:
            self._add_query(query, tables[query.table])

        self.results_lifecycle_to_add = None
        bucket = capture.bucket
        if not capture.imported_bucket and isinstance(bucket, s3.Bucket):
            expire = Duration.days(results_retention_days)
            bucket.add_lifecycle_rule(
                id="expire-athena-results", prefix=f"{self.results_prefix}/", expiration=expire,
                noncurrent_version_expiration=Duration.days(1),
                abort_incomplete_multipart_upload_after=Duration.days(_ABORT_INCOMPLETE_MULTIPART_DAYS))
        else:
            self.results_lifecycle_to_add = (
                f"Imported bucket {capture.bucket_name}: add a lifecycle rule expiring objects under "
                f"{self.results_prefix}/ after {results_retention_days} days (Athena query results); the stack "
                "does not change an imported bucket")

    # ----------------------------------------------------------------------------------------------------- grants
    def grant_capture_query(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` run queries over the captured data in this workgroup, and nothing broader.

        Athena on this workgroup; Glue read on the catalog, this database and its tables; ``s3:ListBucket`` with an
        ``s3:prefix`` condition naming the capture and results prefixes, ``s3:GetBucketLocation``, read on
        ``<bucket>/<prefix>/*``, read and write on ``<bucket>/athena-results/*``; with a capture key, ``kms:Decrypt``
        (and ``kms:GenerateDataKey`` for results) only through S3 for objects of those prefixes. An account that uses
        Lake Formation must also grant the principal SELECT on the tables there.
        """
        stack = self._stack
        bucket_arn = self.capture.bucket_arn
        capture_objects = f"{bucket_arn}/{self.capture.prefix}/*"
        results_objects = f"{bucket_arn}/{self.results_prefix}/*"
        grant = iam.Grant.add_to_principal(grantee=grantee, actions=list(_ATHENA_ACTIONS),
                                           resource_arns=[self.work_group_arn])
        glue_arns = [stack.format_arn(service="glue", resource="catalog"),
                     stack.format_arn(service="glue", resource="database", resource_name=self.database_name)]
        glue_arns += [stack.format_arn(service="glue", resource="table", resource_name=f"{self.database_name}/{t}")
                      for t in self.table_names.values()]
        grant = grant.combine(iam.Grant.add_to_principal(grantee=grantee, actions=list(_GLUE_ACTIONS),
                                                         resource_arns=glue_arns))
        grant = grant.combine(iam.Grant.add_to_principal(
            grantee=grantee, actions=["s3:ListBucket"], resource_arns=[bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{self.capture.prefix}/*", f"{self.results_prefix}/*"]}}))
        grant = grant.combine(iam.Grant.add_to_principal(grantee=grantee, actions=["s3:GetBucketLocation"],
                                                         resource_arns=[bucket_arn]))
        grant = grant.combine(iam.Grant.add_to_principal(grantee=grantee, actions=["s3:GetObject"],
                                                         resource_arns=[capture_objects]))
        grant = grant.combine(iam.Grant.add_to_principal(grantee=grantee, actions=list(_RESULTS_ACTIONS),
                                                         resource_arns=[results_objects]))
        acknowledge_resource_wildcard(grantee, capture_objects, reason=(
            "Queries read the captured objects of every tier under the capture prefix (<bucket>/<prefix>/*); their "
            "keys are chosen by the operator, ELB and SageMaker, never the whole bucket."))
        acknowledge_resource_wildcard(grantee, results_objects, reason=(
            "Athena writes one result object per query under the workgroup's results prefix "
            "(<bucket>/athena-results/*), never the whole bucket."))
        key = self.capture.key
        if key is not None:
            via_s3 = {"kms:ViaService": f"s3.{stack.region}.amazonaws.com"}
            grant = grant.combine(iam.Grant.add_to_principal(
                grantee=grantee, actions=["kms:Decrypt"], resource_arns=[key.key_arn],
                conditions={"StringEquals": via_s3,
                            "StringLike": {"kms:EncryptionContext:aws:s3:arn": [bucket_arn, capture_objects]}}))
            grant = grant.combine(iam.Grant.add_to_principal(
                grantee=grantee, actions=["kms:Decrypt", "kms:GenerateDataKey"], resource_arns=[key.key_arn],
                conditions={"StringEquals": via_s3,
                            "StringLike": {"kms:EncryptionContext:aws:s3:arn": [bucket_arn, results_objects]}}))
        return grant

    # ------------------------------------------------------------------------------------------------ values
    @property
    def work_group_arn(self) -> str:
        return self._stack.format_arn(service="athena", resource="workgroup", resource_name=self.work_group_name,
                                      arn_format=ArnFormat.SLASH_RESOURCE_NAME)

    @property
    def latency_query_string(self) -> str:
        """``EXECUTE alb_latency USING '<hash>', '<yyyy/mm/dd>', '<yyyy/mm/dd>'``: fill in and run."""
        return self.execute_example(facts.LATENCY_STATEMENT)

    @property
    def load_balancers_query_string(self) -> str:
        """``EXECUTE alb_load_balancer USING …``: which load balancer logged under a hash."""
        return self.execute_example(facts.LOAD_BALANCERS_STATEMENT)

    def execute_example(self, statement: str) -> str:
        """``EXECUTE`` of one of the statements, a ``<placeholder>`` per parameter (``<hash>``, ``<yyyy/mm/dd>``)."""
        query = facts.QUERIES_BY_NAME[statement]
        return self.execute_statement(statement, [f"<{p.split()[-1]}>" for p in query.parameters])

    def execute_statement(self, statement: str, arguments: list[str]) -> str:
        """``EXECUTE <statement> USING <arguments>`` (each a quoted SQL string literal)."""
        literals = ", ".join("'" + a.replace("'", "''") + "'" for a in arguments)
        return f"EXECUTE {statement} USING {literals}" if arguments else f"EXECUTE {statement}"

    # --------------------------------------------------------------------------------------------- internals
    def _table(self, construct_id: str, name: str, columns: tuple[tuple[str, str], ...],
               partitions: tuple[tuple[str, str, str], ...], parameters: dict[str, str], *,
               serde: glue.CfnTable.SerdeInfoProperty, description: str) -> glue.CfnTable:
        table = glue.CfnTable(
            self, construct_id, catalog_id=self._stack.account, database_name=self.database_name,
            table_input=glue.CfnTable.TableInputProperty(
                name=name, description=description, table_type="EXTERNAL_TABLE", parameters=parameters,
                partition_keys=[glue.CfnTable.ColumnProperty(name=n, type=t, comment=c) for n, t, c in partitions],
                storage_descriptor=glue.CfnTable.StorageDescriptorProperty(
                    location=f"{self._capture_root}/",
                    columns=[glue.CfnTable.ColumnProperty(name=n, type=t) for n, t in columns],
                    input_format=facts.TEXT_INPUT_FORMAT, output_format=facts.TEXT_OUTPUT_FORMAT,
                    serde_info=serde)))
        table.node.add_dependency(self.database)
        return table

    def _add_query(self, query: facts.Query, table: glue.CfnTable) -> None:
        sql = query.text(self.database_name)
        params = "; ".join(f"{i}: {p}" for i, p in enumerate(query.parameters, start=1))
        description = f"{query.description}. Parameters: {params}"[:1024]
        pid = "".join(part.capitalize() for part in query.name.split("_"))
        named = athena.CfnNamedQuery(self, f"{pid}Query", name=query.name, database=self.database_name,
                                     work_group=self.work_group_name, query_string=sql, description=description)
        statement = athena.CfnPreparedStatement(self, f"{pid}Statement", statement_name=query.name,
                                                work_group=self.work_group_name, query_statement=sql,
                                                description=description)
        for resource in (named, statement):
            resource.node.add_dependency(self.work_group, table)  # one call into the CDK runtime for both
        self.named_queries[query.name] = named
        self.prepared_statements[query.name] = statement

    def _results_encryption(self) -> athena.CfnWorkGroup.EncryptionConfigurationProperty:
        key = self.capture.key
        if key is None:
            return athena.CfnWorkGroup.EncryptionConfigurationProperty(encryption_option="SSE_S3")
        return athena.CfnWorkGroup.EncryptionConfigurationProperty(encryption_option="SSE_KMS", kms_key=key.key_arn)

    @staticmethod
    def _validate(bytes_scanned_cutoff_mb: Any, results_retention_days: Any, prefix: str) -> None:
        problems = []
        if (isinstance(bytes_scanned_cutoff_mb, bool) or not isinstance(bytes_scanned_cutoff_mb, int)
                or bytes_scanned_cutoff_mb < facts.MIN_BYTES_SCANNED_CUTOFF_MB):
            problems.append(f"bytes_scanned_cutoff_mb: must be a whole number of MB >= "
                            f"{facts.MIN_BYTES_SCANNED_CUTOFF_MB} (Athena's minimum; got {bytes_scanned_cutoff_mb!r})")
        if (isinstance(results_retention_days, bool) or not isinstance(results_retention_days, int)
                or results_retention_days < 1):
            problems.append(f"results_retention_days: must be a whole number of days >= 1 "
                            f"(got {results_retention_days!r})")
        results = facts.RESULTS_PREFIX
        if not is_unresolved(prefix) and (prefix == results or prefix.startswith(f"{results}/")):
            problems.append(f"capture prefix {prefix!r}: {results}/ holds the query results; the tables would read "
                            "them as captured data")
        if problems:
            raise ValueError("CaptureAnalytics: invalid props:\n" + "\n".join(f"  - {p}" for p in problems))
