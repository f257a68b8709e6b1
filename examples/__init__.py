"""Runnable agents that the README and the tests use."""
