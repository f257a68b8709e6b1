"""What happened and going back: a run's history and forks (time travel), rollback with its
undo log, and the listings surfaces page through."""
