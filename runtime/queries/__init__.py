"""What surfaces read: `Queries` over the durable state, answering with records and views."""

from runtime.queries.reads import NOT_FOUND, PENDING_SCAN, Queries
from runtime.queries.views import Counts, MetricsSnapshot, RunDetail

__all__ = ["NOT_FOUND", "PENDING_SCAN", "Counts", "MetricsSnapshot", "Queries", "RunDetail"]
