"""What the tests share: servers, harnesses and payloads, and the agents and scripts that
`signoff` subprocesses load from this folder."""

from pathlib import Path

SUPPORT = Path(__file__).parent
"""This folder: put it on a subprocess's PYTHONPATH to load its agents by module name."""
