"""Driving runs: creating them, the checkpointed loop under a lease, the journal it writes,
how runs end, and recovery after a crash."""
