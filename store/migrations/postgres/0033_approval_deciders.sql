-- While older workers run: safe. Triggers keep the table whatever code writes approvals, and older code never reads it.
-- Who may decide each pending approval, one row per person, user group or '*' (a policy that
-- names nobody: anyone) its authority names (issue 40.4), so a person's Home selects their own
-- pending approvals by index, longest-waiting first, at any backlog of other people's. The
-- rows are derived from `approvals.authority` and kept by the triggers below, like an index
-- over a JSON list: written when a pending approval is asked or its authority filled in, the
-- policy's `escalate_to` once it escalates, gone when it is decided (or pruned). `self_ok`:
-- the requester (`requested_by`) may approve their own call.
-- And the indexes a person's own requests and decisions are read by, for the same Home.
CREATE INDEX approvals_by_requester ON approvals (requested_by, created_at);
CREATE INDEX approvals_by_decider ON approvals (decided_by, created_at);
CREATE TABLE approval_deciders (
    decider text NOT NULL,
    created_at timestamptz NOT NULL,
    approval_id text NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    self_ok boolean NOT NULL,
    requested_by text,
    PRIMARY KEY (decider, created_at, approval_id)
);
CREATE INDEX approval_deciders_by_approval ON approval_deciders (approval_id);

CREATE FUNCTION signoff_approval_deciders(a approvals) RETURNS void LANGUAGE sql AS $$
    INSERT INTO approval_deciders (decider, created_at, approval_id, self_ok, requested_by)
    SELECT DISTINCT who, a.created_at, a.id,
           coalesce((a.authority -> 'settings' ->> 'allow_self_approval')::boolean, false),
           a.requested_by
    FROM (
        SELECT jsonb_array_elements_text(
            coalesce(a.authority -> 'settings' -> 'approvers', '[]'::jsonb))
        UNION ALL
        SELECT '*'
        WHERE jsonb_array_length(
            coalesce(a.authority -> 'settings' -> 'approvers', '[]'::jsonb)) = 0
        UNION ALL
        SELECT a.authority -> 'settings' ->> 'escalate_to'
        WHERE a.escalated AND a.authority -> 'settings' ->> 'escalate_to' IS NOT NULL
    ) AS d (who)
    ON CONFLICT DO NOTHING
$$;

CREATE FUNCTION signoff_approval_asked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM signoff_approval_deciders(new);
    RETURN NULL;
END $$;

CREATE FUNCTION signoff_approval_decided() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM approval_deciders WHERE approval_id = new.id;
    RETURN NULL;
END $$;

CREATE TRIGGER approval_deciders_asked AFTER INSERT ON approvals
FOR EACH ROW WHEN (new.state = 'pending' AND new.authority IS NOT NULL)
EXECUTE FUNCTION signoff_approval_asked();

CREATE TRIGGER approval_deciders_filled AFTER UPDATE OF authority ON approvals
FOR EACH ROW
WHEN (new.state = 'pending' AND new.authority IS NOT NULL AND old.authority IS NULL)
EXECUTE FUNCTION signoff_approval_asked();

CREATE TRIGGER approval_deciders_escalated AFTER UPDATE OF escalated ON approvals
FOR EACH ROW
WHEN (new.state = 'pending' AND new.authority IS NOT NULL AND new.escalated AND NOT old.escalated)
EXECUTE FUNCTION signoff_approval_asked();

CREATE TRIGGER approval_deciders_decided AFTER UPDATE OF state ON approvals
FOR EACH ROW WHEN (old.state = 'pending' AND new.state <> 'pending')
EXECUTE FUNCTION signoff_approval_decided();

-- The approvals pending now.
SELECT signoff_approval_deciders(a) FROM approvals a
WHERE a.state = 'pending' AND a.authority IS NOT NULL;
