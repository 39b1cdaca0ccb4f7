"""The job a token is for, as the orchestrator's plug-in names it (Spark, Flink, a client's own code).

kts keeps it in the audit trail only, on the token's ``token.create`` event: Kafka's token record has no
room for it, so the cluster never sees it. It is what the caller says, not something kts checks: a leaked
token found by its id leads to the job its create named, and to the principal that asked for it, which
kts did authenticate.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

MAX_FRAMEWORK_LENGTH = 32
MAX_JOB_TEXT_LENGTH = 256  # id, name, user
JOB_KEYS: tuple[str, ...] = ("framework", "id", "name", "user")
"""The keys a job may carry, in the order the audit trail stores them."""


@dataclass(frozen=True, slots=True)
class TokenJob:
    framework: str | None = None  # "spark", "flink", ...
    id: str | None = None  # the framework's application or job id
    name: str | None = None
    user: str | None = None  # who submitted the job, as the framework knows them

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, field.name) is None for field in fields(self))


def job_or_none(job: TokenJob | None) -> TokenJob | None:
    """``job``, or None when it names nothing (``{}`` in a request says no more than no job)."""
    return None if job is None or job.is_empty else job
