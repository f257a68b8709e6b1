-- While older workers run: safe. A trigger numbers events by commit, older code's too.
-- The audit trail in commit order. An event's `id` is drawn when it is inserted, and
-- concurrent transactions commit in another order than they drew ids, so a reader paging by
-- id could list an event before an earlier-committed one, or page past one that commits
-- later. Each event also gets `commit_seq` at commit time (a deferred trigger, under a lock
-- held until the transaction ends): commit_seq order is commit order, and a reader that sees
-- an event sees every event committed before it. Listings read it as the event's id.
ALTER TABLE audit_events ADD COLUMN commit_seq bigint;
ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only;
UPDATE audit_events SET commit_seq = id;
ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only;
CREATE SEQUENCE audit_commit_seq;
SELECT setval('audit_commit_seq', coalesce((SELECT max(id) FROM audit_events), 0) + 1, false);
CREATE UNIQUE INDEX audit_events_by_commit ON audit_events (commit_seq);
CREATE INDEX audit_events_by_run_commit ON audit_events (run_id, commit_seq);

-- Append-only, but for the commit sequence set once.
CREATE OR REPLACE FUNCTION signoff_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF old.commit_seq IS NULL AND new.commit_seq IS NOT NULL
       AND (new.id, new.at, new.actor, new.action, new.run_id, new.approval_id, new.detail::text)
           IS NOT DISTINCT FROM
           (old.id, old.at, old.actor, old.action, old.run_id, old.approval_id, old.detail::text)
    THEN
        RETURN new;
    END IF;
    RAISE EXCEPTION 'audit events are append-only';
END;
$$;

CREATE FUNCTION signoff_audit_commit_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- One committer at a time from here to the end of its transaction: numbers are taken in
    -- the order transactions commit. (The lock's key is an arbitrary one of Signoff's.)
    PERFORM pg_advisory_xact_lock(5424078192736240980);
    UPDATE audit_events SET commit_seq = nextval('audit_commit_seq') WHERE id = new.id;
    RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER audit_events_commit_seq AFTER INSERT ON audit_events
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION signoff_audit_commit_seq();
