-- While older workers run: safe. A trigger chains every event at commit, older code's too.
-- The audit trail as a hash chain (`store.chain`): each event carries the hash of the one
-- before it and its own, set once, by the writer before each commit (SQLite's one writer
-- commits in id order). Events written before this migration are chained by the first
-- commit after it. A prune that removes the oldest events leaves an anchor at the cut, so
-- what is kept still verifies; anchors of the chain's head can be signed.
ALTER TABLE audit_events ADD COLUMN prev_hash TEXT;
ALTER TABLE audit_events ADD COLUMN hash TEXT;
CREATE INDEX audit_events_unsealed ON audit_events (id) WHERE hash IS NULL;

CREATE TABLE audit_anchors (
    seq    INTEGER NOT NULL,
    kind   TEXT NOT NULL,
    hash   TEXT NOT NULL,
    at     REAL NOT NULL,
    signed TEXT,
    PRIMARY KEY (seq, kind)
);

-- Append-only, but for the chain's two hashes, set once.
DROP TRIGGER audit_events_append_only;
CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events
WHEN NOT (old.hash IS NULL AND new.hash IS NOT NULL AND new.id = old.id AND new.at IS old.at
          AND new.actor IS old.actor AND new.action IS old.action AND new.run_id IS old.run_id
          AND new.approval_id IS old.approval_id AND new.detail IS old.detail)
BEGIN
    SELECT RAISE(ABORT, 'audit events are append-only');
END;
