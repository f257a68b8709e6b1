"""The Slack app: Block Kit, listeners, the outbox sender, and a local fake Slack."""
