"""The bodies of ``/readyz`` (a status and a reason word, for anyone) and of ``GET /v1/cluster/status`` (for callers
with ``Describe`` on the cluster: the backend, each dependency's state, and the cluster's migration to KRaft as this
replica sees it)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.api.schemas.common import ErrorBody
from app.api.schemas.migration import MigrationJson, migration_json
from app.domain.cluster_facts import ClusterFacts
from app.service.readiness import ReadinessReport


class ClusterFactsJson(BaseModel):
    mode: str = Field(description="`kraft` or `zookeeper`: how the cluster keeps its metadata.", examples=["kraft"])
    clusterId: str | None = Field(description="The cluster's id.")
    nodes: list[str] = Field(
        description="The brokers (`id host:port`) through the Kafka protocol, or the ZooKeeper ensemble kts uses."
    )
    metadataVersion: str | None = Field(
        description="KRaft: the finalized `metadata.version` (its feature level); null in ZooKeeper mode."
    )
    principal: str | None = Field(description="Who kts is to the cluster (its login), if it has one.")
    secretCheck: str = Field(description="The result of the start-up check of `delegation.token.secret.key`.")


def cluster_facts_json(facts: ClusterFacts) -> ClusterFactsJson:
    return ClusterFactsJson(
        mode=facts.mode,
        clusterId=facts.cluster_id,
        nodes=list(facts.nodes),
        metadataVersion=facts.metadata_version,
        principal=facts.principal,
        secretCheck=facts.secret_check,
    )


STATUS_HELP = "`ready`, `read-only` while the cluster refuses kts's writes, or `not-ready`."
REASON_HELP = (
    "One word: `ok`; the migration phase that refuses writes (`migrating`, `migrated`, `unknown`); or the first "
    "dependency that is not ready (`cluster`, `tokens`, `acls`, `audit_database`, `runtime`)."
)


class ReadyBody(BaseModel):
    status: str = Field(description=STATUS_HELP, examples=["ready"])
    reason: str = Field(description=REASON_HELP, examples=["ok"])


class ClusterStatusBody(BaseModel):
    status: str = Field(description=STATUS_HELP, examples=["ready"])
    reason: str = Field(description=REASON_HELP, examples=["ok"])
    backend: str | None = Field(
        description="How kts reaches the cluster: `zookeeper` (zookeeper.connect) or `kafka` (bootstrap.servers)."
    )
    checks: dict[str, str] = Field(description="Each dependency: `ok`, or a few words saying what is wrong.")
    migration: MigrationJson | None = Field(
        default=None, description="With ZooKeeper: the cluster and its migration to KRaft, as ZooKeeper shows them."
    )
    cluster: ClusterFactsJson | None = Field(
        default=None,
        description="The cluster itself: mode, id, brokers or ensemble, metadata.version, kts's principal and the "
        "secret check (null while it cannot be asked: the `cluster_facts` check then says why).",
    )


class NotReadyBody(ErrorBody):
    status: str = Field(description="`not-ready`.", examples=["not-ready"])
    reason: str = Field(description=REASON_HELP, examples=["cluster"])


def cluster_status_body(report: ReadinessReport) -> ClusterStatusBody:
    return ClusterStatusBody(
        status=report.status,
        reason=report.reason,
        backend=report.backend,
        checks=report.checks,
        migration=None if report.cluster is None else migration_json(report.cluster, report.unrenewable),
        cluster=None if report.facts is None else cluster_facts_json(report.facts),
    )
