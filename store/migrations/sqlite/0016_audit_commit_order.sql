-- While older workers run: safe. A trigger numbers events by commit, older code's too.
-- The audit trail in commit order: SQLite commits one write transaction at a time, so an
-- event's id, drawn inside its transaction, is already its place in the commit order (the
-- PostgreSQL twin adds a commit-time sequence). Nothing to change; the number keeps the two
-- dialects' schema versions in step.
SELECT 1;
