"""A hosted model call's defaults, which the adapters (`runtime.models.hosted`) and the
configuration (`runtime.models.config`) share: the configuration is read by every command,
the adapters only by a process that runs a hosted model."""

DEFAULT_TIMEOUT = 120.0
"""Seconds for one HTTP attempt; the SDK retries a timed-out attempt like a 5xx."""
DEFAULT_MAX_RETRIES = 2
