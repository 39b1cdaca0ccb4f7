"""``/v1/cluster/status``: the replica's full view of its dependencies and of the cluster, for operators."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.authenticated_route import AuthenticatedRoute
from app.api.deps import ClusterStatusView, CurrentCaller
from app.api.responses import error_responses
from app.api.schemas.ops import ClusterStatusBody, cluster_status_body

router = APIRouter(prefix="/v1/cluster", tags=["operations"], route_class=AuthenticatedRoute)


@router.get("/status", response_model=ClusterStatusBody, responses=error_responses(401, 403, 422, 503))
def cluster_status(caller: CurrentCaller, status: ClusterStatusView) -> ClusterStatusBody:
    """What ``/readyz`` tells no stranger: how kts reaches the cluster (``backend``), each dependency's state
    (``checks``) and, with ZooKeeper, where the cluster stands in its migration to KRaft (its id, controller and
    offsets). Needs ``Describe`` on ``Cluster:kafka-cluster`` (or a super user). Answers 200 whether or not the
    replica is ready: ``status`` and ``reason`` say which, as ``/readyz`` does."""
    return cluster_status_body(status.report(caller))
