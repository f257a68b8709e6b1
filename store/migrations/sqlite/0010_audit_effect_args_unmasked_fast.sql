-- While older workers run: safe. The masking function answers as before, faster.
-- An effect's audit event copies its arguments as they are when none is sensitive (most
-- tools): rebuilding the object key by key to mask nothing cost a non-idempotent step
-- ~40 us of its commit.
DROP TRIGGER audit_effect_ended;

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
            'args', CASE WHEN new.sensitive = '[]' THEN json(new.args) ELSE json((
                SELECT json_group_object(
                    j.key,
                    CASE WHEN j.key IN (SELECT value FROM json_each(new.sensitive))
                         THEN '[sensitive]'
                         WHEN j.type IN ('object', 'array', 'true', 'false') THEN json(j.atom_json)
                         ELSE j.value END)
                FROM (SELECT key, type, value,
                             CASE type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
                                       ELSE value END AS atom_json
                      FROM json_each(new.args)) AS j)) END
        )
    );
END;
