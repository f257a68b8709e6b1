-- While older workers run: safe. A trigger chains every event at commit, older code's too.
-- The audit trail as a hash chain (`store.chain`): each event carries the hash of the one
-- before it and its own, set once, at commit, by the trigger that numbers events in commit
-- order under its lock (migration 0016): one chain per database. The hashed content is
-- `jsonb_build_array(at in epoch microseconds, actor, action, run_id, approval_id,
-- detail)::text`, which `store.chain.canonical` writes the same way. Events written before
-- this migration are chained here, in commit order. A prune that removes the oldest events
-- leaves an anchor at the cut, so what is kept still verifies; anchors can be signed.
ALTER TABLE audit_events ADD COLUMN prev_hash text;
ALTER TABLE audit_events ADD COLUMN hash text;

CREATE TABLE audit_anchors (
    seq    bigint NOT NULL,
    kind   text NOT NULL,
    hash   text NOT NULL,
    at     timestamptz NOT NULL,
    signed text,
    PRIMARY KEY (seq, kind)
);

CREATE FUNCTION signoff_audit_link(prev text, at timestamptz, actor text, action text,
                                   run_id text, approval_id text, detail jsonb)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT encode(sha256(convert_to(prev || E'\n' || jsonb_build_array(
        (extract(epoch FROM at) * 1000000)::bigint, actor, action, run_id, approval_id, detail
    )::text, 'UTF8')), 'hex')
$$;

-- The head of the chain: the last event numbered, else the last anchor (all pruned), else
-- the chain's start.
CREATE FUNCTION signoff_audit_head() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        (SELECT hash FROM audit_events WHERE commit_seq IS NOT NULL
         ORDER BY commit_seq DESC LIMIT 1),
        (SELECT hash FROM audit_anchors ORDER BY seq DESC LIMIT 1),
        repeat('0', 64))
$$;

-- Append-only, but for the commit sequence and the chain's hashes, each set once.
CREATE OR REPLACE FUNCTION signoff_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (old.commit_seq IS NULL OR new.commit_seq = old.commit_seq)
       AND (old.hash IS NULL OR (new.hash, new.prev_hash) = (old.hash, old.prev_hash))
       AND (new.id, new.at, new.actor, new.action, new.run_id, new.approval_id, new.detail::text)
           IS NOT DISTINCT FROM
           (old.id, old.at, old.actor, old.action, old.run_id, old.approval_id, old.detail::text)
    THEN
        RETURN new;
    END IF;
    RAISE EXCEPTION 'audit events are append-only';
END;
$$;

CREATE OR REPLACE FUNCTION signoff_audit_commit_seq() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    prev text;
BEGIN
    -- One committer at a time from here to the end of its transaction: numbers are taken in
    -- the order transactions commit, and each event links to the one numbered before it.
    PERFORM pg_advisory_xact_lock(5424078192736240980);
    prev := signoff_audit_head();
    UPDATE audit_events
    SET commit_seq = nextval('audit_commit_seq'), prev_hash = prev,
        hash = signoff_audit_link(prev, new.at, new.actor, new.action, new.run_id,
                                  new.approval_id, new.detail)
    WHERE id = new.id;
    RETURN NULL;
END;
$$;

DO $$
DECLARE
    r record;
    prev text := repeat('0', 64);
BEGIN
    PERFORM pg_advisory_xact_lock(5424078192736240980);
    FOR r IN SELECT id, at, actor, action, run_id, approval_id, detail FROM audit_events
             WHERE commit_seq IS NOT NULL ORDER BY commit_seq LOOP
        UPDATE audit_events
        SET prev_hash = prev,
            hash = signoff_audit_link(prev, r.at, r.actor, r.action, r.run_id, r.approval_id,
                                      r.detail)
        WHERE id = r.id
        RETURNING hash INTO prev;
    END LOOP;
END;
$$;
