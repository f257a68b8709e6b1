"""The Slack surface and the process entry point."""
