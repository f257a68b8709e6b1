"""What surfaces read: `Queries` over the durable state, answering with records and views."""

from runtime.queries.reads import NOT_FOUND
from runtime.queries.reads import PENDING_SCAN
from runtime.queries.reads import Queries
from runtime.queries.views import Counts
from runtime.queries.views import MetricsSnapshot
from runtime.queries.views import RunDetail

__all__ = ["NOT_FOUND", "PENDING_SCAN", "Counts", "MetricsSnapshot", "Queries", "RunDetail"]
