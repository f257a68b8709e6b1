-- While older workers run: unsafe. Older code marks nothing sensitive: secrets would reach the audit unmasked.
-- The audit trail an auditor is handed: every request, auto-approval, denial (with the rule
-- that made it, migration 0008), escalation,
-- page and execution is written by a trigger in the same transaction as the change, whatever
-- code path made it (decisions, votes, acknowledgements, cancels, rollbacks and
-- compensations are recorded by the runtime with the event it passes along). Arguments a tool
-- marks sensitive are masked before they reach an event; events are never updated.
-- (The PostgreSQL twin of sqlite/0009, in PL/pgSQL.)

-- The names of the arguments a tool marks sensitive (a JSON list), on each call it makes.
ALTER TABLE approvals ADD COLUMN sensitive jsonb NOT NULL DEFAULT '[]';
ALTER TABLE effects ADD COLUMN sensitive jsonb NOT NULL DEFAULT '[]';

-- Metrics count effects in doubt on every scrape: only those rows are indexed.
CREATE INDEX effects_in_doubt ON effects (run_id) WHERE status = 'in_doubt';
-- The audit export reads a time range.
CREATE INDEX audit_events_by_time ON audit_events (at, id);

CREATE FUNCTION signoff_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only';
END;
$$;

CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events
FOR EACH ROW EXECUTE FUNCTION signoff_audit_append_only();

-- A tool's arguments with those it marks sensitive masked (top-level keys, as in SQLite).
CREATE FUNCTION signoff_masked(args jsonb, sensitive jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(jsonb_object_agg(
        key, CASE WHEN sensitive ? key THEN to_jsonb('[sensitive]'::text) ELSE value END
    ), '{}'::jsonb)
    FROM jsonb_each(args)
$$;

CREATE FUNCTION signoff_audit_approval_requested() RETURNS trigger LANGUAGE plpgsql AS $$
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
        jsonb_build_object(
            'tool', new.tool,
            'policy', new.policy,
            'call_id', new.call_id,
            'args', signoff_masked(new.args, new.sensitive),
            'required_approvals', new.required_approvals,
            'duplicate_of', new.duplicate_of
        )
        -- the approval rule that made it and a denial's text, when there are
        || jsonb_strip_nulls(jsonb_build_object('rule', new.rule ->> 'summary',
                                                'reason', new.reason))
    );
    RETURN NULL;
END;
$$;

CREATE TRIGGER audit_approval_requested AFTER INSERT ON approvals
FOR EACH ROW EXECUTE FUNCTION signoff_audit_approval_requested();

CREATE FUNCTION signoff_audit_approval_escalated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    VALUES (clock_timestamp(), 'signoff', 'approval_escalated', new.run_id, new.id,
            jsonb_build_object('tool', new.tool, 'policy', new.policy,
                               'reminders_sent', new.reminders_sent));
    RETURN NULL;
END;
$$;

CREATE TRIGGER audit_approval_escalated AFTER UPDATE OF escalated ON approvals
FOR EACH ROW WHEN (new.escalated AND NOT old.escalated)
EXECUTE FUNCTION signoff_audit_approval_escalated();

CREATE FUNCTION signoff_audit_page_opened() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    VALUES (new.created_at, 'signoff', 'page_opened', new.run_id, NULL,
            jsonb_build_object('page_id', new.id, 'call_id', new.call_id, 'tool', new.tool,
                               'reason', new.reason));
    RETURN NULL;
END;
$$;

CREATE TRIGGER audit_page_opened AFTER INSERT ON pages
FOR EACH ROW EXECUTE FUNCTION signoff_audit_page_opened();

-- What a mutating tool did: executed (with the arguments it ran with), failed, or in doubt.
CREATE FUNCTION signoff_audit_effect_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    VALUES (
        coalesce(new.finished_at, clock_timestamp()),
        'signoff',
        CASE new.status WHEN 'completed' THEN 'effect_completed'
                        WHEN 'failed' THEN 'effect_failed'
                        ELSE 'effect_in_doubt' END,
        new.run_id,
        new.approval_id,
        jsonb_build_object(
            'call_id', new.call_id,
            'tool', new.tool,
            'reversibility', new.reversibility,
            'compensates', new.compensates,
            'args', signoff_masked(new.args, new.sensitive)
        )
    );
    RETURN NULL;
END;
$$;

CREATE TRIGGER audit_effect_ended AFTER UPDATE OF status ON effects
FOR EACH ROW WHEN (new.status <> old.status AND new.reversibility <> 'read'
                   AND new.status IN ('completed', 'failed', 'in_doubt'))
EXECUTE FUNCTION signoff_audit_effect_ended();
