"""Slack messages: Block Kit built by pure functions, and the escaping of untrusted text."""
