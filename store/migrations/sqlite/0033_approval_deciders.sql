-- While older workers run: safe. Triggers keep the table whatever code writes approvals, and older code never reads it.
-- Who may decide each pending approval, one row per person, user group or '*' (a policy that
-- names nobody: anyone) its authority names (issue 40.4), so a person's Home selects their own
-- pending approvals by index, longest-waiting first, at any backlog of other people's. The
-- rows are derived from `approvals.authority` and kept by the triggers below, like an index
-- SQLite cannot express over a JSON list: written when a pending approval is asked or its
-- authority filled in, the policy's `escalate_to` once it escalates, gone when it is decided
-- (or pruned). `self_ok`: the requester (`requested_by`) may approve their own call.
-- And the indexes a person's own requests and decisions are read by, for the same Home.
CREATE INDEX approvals_by_requester ON approvals (requested_by, created_at);
CREATE INDEX approvals_by_decider ON approvals (decided_by, created_at);
CREATE TABLE approval_deciders (
    decider TEXT NOT NULL,
    created_at REAL NOT NULL,
    approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    self_ok INTEGER NOT NULL,
    requested_by TEXT,
    PRIMARY KEY (decider, created_at, approval_id)
) WITHOUT ROWID;
CREATE INDEX approval_deciders_by_approval ON approval_deciders (approval_id);

CREATE TRIGGER approval_deciders_asked AFTER INSERT ON approvals
WHEN new.state = 'pending' AND new.authority IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO approval_deciders
    SELECT j.value, new.created_at, new.id,
           coalesce(json_extract(new.authority, '$.settings.allow_self_approval'), 0),
           new.requested_by
    FROM json_each(new.authority, '$.settings.approvers') j;
    INSERT OR IGNORE INTO approval_deciders
    SELECT '*', new.created_at, new.id,
           coalesce(json_extract(new.authority, '$.settings.allow_self_approval'), 0),
           new.requested_by
    WHERE coalesce(json_array_length(new.authority, '$.settings.approvers'), 0) = 0;
    INSERT OR IGNORE INTO approval_deciders
    SELECT json_extract(new.authority, '$.settings.escalate_to'), new.created_at, new.id,
           coalesce(json_extract(new.authority, '$.settings.allow_self_approval'), 0),
           new.requested_by
    WHERE new.escalated AND json_extract(new.authority, '$.settings.escalate_to') IS NOT NULL;
END;

CREATE TRIGGER approval_deciders_filled AFTER UPDATE OF authority ON approvals
WHEN new.state = 'pending' AND new.authority IS NOT NULL AND old.authority IS NULL
BEGIN
    INSERT OR IGNORE INTO approval_deciders
    SELECT j.value, new.created_at, new.id,
           coalesce(json_extract(new.authority, '$.settings.allow_self_approval'), 0),
           new.requested_by
    FROM json_each(new.authority, '$.settings.approvers') j;
    INSERT OR IGNORE INTO approval_deciders
    SELECT '*', new.created_at, new.id,
           coalesce(json_extract(new.authority, '$.settings.allow_self_approval'), 0),
           new.requested_by
    WHERE coalesce(json_array_length(new.authority, '$.settings.approvers'), 0) = 0;
    INSERT OR IGNORE INTO approval_deciders
    SELECT json_extract(new.authority, '$.settings.escalate_to'), new.created_at, new.id,
           coalesce(json_extract(new.authority, '$.settings.allow_self_approval'), 0),
           new.requested_by
    WHERE new.escalated AND json_extract(new.authority, '$.settings.escalate_to') IS NOT NULL;
END;

CREATE TRIGGER approval_deciders_escalated AFTER UPDATE OF escalated ON approvals
WHEN new.state = 'pending' AND new.escalated AND NOT old.escalated
     AND json_extract(new.authority, '$.settings.escalate_to') IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO approval_deciders
    SELECT json_extract(new.authority, '$.settings.escalate_to'), new.created_at, new.id,
           coalesce(json_extract(new.authority, '$.settings.allow_self_approval'), 0),
           new.requested_by;
END;

CREATE TRIGGER approval_deciders_decided AFTER UPDATE OF state ON approvals
WHEN old.state = 'pending' AND new.state <> 'pending'
BEGIN
    DELETE FROM approval_deciders WHERE approval_id = new.id;
END;

-- The approvals pending now.
INSERT OR IGNORE INTO approval_deciders
SELECT j.value, a.created_at, a.id,
       coalesce(json_extract(a.authority, '$.settings.allow_self_approval'), 0), a.requested_by
FROM approvals a, json_each(a.authority, '$.settings.approvers') j
WHERE a.state = 'pending' AND a.authority IS NOT NULL;
INSERT OR IGNORE INTO approval_deciders
SELECT '*', a.created_at, a.id,
       coalesce(json_extract(a.authority, '$.settings.allow_self_approval'), 0), a.requested_by
FROM approvals a
WHERE a.state = 'pending' AND a.authority IS NOT NULL
  AND coalesce(json_array_length(a.authority, '$.settings.approvers'), 0) = 0;
INSERT OR IGNORE INTO approval_deciders
SELECT json_extract(a.authority, '$.settings.escalate_to'), a.created_at, a.id,
       coalesce(json_extract(a.authority, '$.settings.allow_self_approval'), 0), a.requested_by
FROM approvals a
WHERE a.state = 'pending' AND a.escalated
  AND json_extract(a.authority, '$.settings.escalate_to') IS NOT NULL;
