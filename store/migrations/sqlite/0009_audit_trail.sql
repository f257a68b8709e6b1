-- While older workers run: unsafe. Older code marks nothing sensitive: secrets would reach the audit unmasked.
-- The audit trail an auditor is handed: every request, auto-approval, denial (with the rule
-- that made it, migration 0008), escalation,
-- page and execution is written by a trigger in the same transaction as the change, whatever
-- code path made it (decisions, votes, acknowledgements, cancels, rollbacks and
-- compensations are recorded by the runtime with the event it passes along). Arguments a tool
-- marks sensitive are masked before they reach an event; events are never updated.

-- The names of the arguments a tool marks sensitive (a JSON list), on each call it makes.
ALTER TABLE approvals ADD COLUMN sensitive TEXT NOT NULL DEFAULT '[]';
ALTER TABLE effects ADD COLUMN sensitive TEXT NOT NULL DEFAULT '[]';

-- Metrics count effects in doubt on every scrape: only those rows are indexed.
CREATE INDEX effects_in_doubt ON effects (run_id) WHERE status = 'in_doubt';
-- The audit export reads a time range.
CREATE INDEX audit_events_by_time ON audit_events (at, id);

CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit events are append-only');
END;

CREATE TRIGGER audit_approval_requested AFTER INSERT ON approvals
BEGIN
    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    VALUES (
        new.created_at,
        -- who asked (an API request may not say), or the rule's own decider
        CASE new.state WHEN 'pending' THEN coalesce(new.requested_by, 'unknown')
                       ELSE coalesce(new.decided_by, 'signoff') END,
        CASE new.state WHEN 'pending' THEN 'approval_requested'
                       WHEN 'approved' THEN 'approval_auto_approved'
                       ELSE 'approval_denied' END,
        new.run_id,
        new.id,
        json_patch(json_object(
            'tool', new.tool,
            'policy', new.policy,
            'call_id', new.call_id,
            'args', json((SELECT json_group_object(
                j.key,
                CASE WHEN j.key IN (SELECT value FROM json_each(new.sensitive)) THEN '[sensitive]'
                     WHEN j.type IN ('object', 'array', 'true', 'false') THEN json(j.atom_json)
                     ELSE j.value END)
                FROM (SELECT key, type, value,
                             CASE type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
                                       ELSE value END AS atom_json
                      FROM json_each(new.args)) AS j)),
            'required_approvals', new.required_approvals,
            'duplicate_of', new.duplicate_of
        ),
        -- the approval rule that made it and a denial's text, when there are (a null in a
        -- JSON merge patch adds nothing)
        json_object('rule', json_extract(new.rule, '$.summary'), 'reason', new.reason)
        )
    );
END;

CREATE TRIGGER audit_approval_escalated AFTER UPDATE OF escalated ON approvals
WHEN new.escalated = 1 AND old.escalated = 0
BEGIN
    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    VALUES ((julianday('now') - 2440587.5) * 86400.0, 'signoff', 'approval_escalated',
            new.run_id, new.id,
            json_object('tool', new.tool, 'policy', new.policy,
                        'reminders_sent', new.reminders_sent));
END;

CREATE TRIGGER audit_page_opened AFTER INSERT ON pages
BEGIN
    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    VALUES (new.created_at, 'signoff', 'page_opened', new.run_id, NULL,
            json_object('page_id', new.id, 'call_id', new.call_id, 'tool', new.tool,
                        'reason', new.reason));
END;

-- What a mutating tool did: executed (with the arguments it ran with), failed, or in doubt.
CREATE TRIGGER audit_effect_ended AFTER UPDATE OF status ON effects
WHEN new.status <> old.status AND new.reversibility <> 'read'
 AND new.status IN ('completed', 'failed', 'in_doubt')
BEGIN
    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    VALUES (
        coalesce(new.finished_at, (julianday('now') - 2440587.5) * 86400.0),
        'signoff',
        CASE new.status WHEN 'completed' THEN 'effect_completed'
                        WHEN 'failed' THEN 'effect_failed'
                        ELSE 'effect_in_doubt' END,
        new.run_id,
        new.approval_id,
        json_object(
            'call_id', new.call_id,
            'tool', new.tool,
            'reversibility', new.reversibility,
            'compensates', new.compensates,
            'args', json((SELECT json_group_object(
                j.key,
                CASE WHEN j.key IN (SELECT value FROM json_each(new.sensitive)) THEN '[sensitive]'
                     WHEN j.type IN ('object', 'array', 'true', 'false') THEN json(j.atom_json)
                     ELSE j.value END)
                FROM (SELECT key, type, value,
                             CASE type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
                                       ELSE value END AS atom_json
                      FROM json_each(new.args)) AS j))
        )
    );
END;
