-- While older workers run: unsafe. Older code would judge decisions by its own policies, not the approval's rule.
-- The approval rule an approval was created under (JSON: which rule, why, and the policy it
-- chose), so a rule changed later never changes who decides it, and every surface can say
-- "rule 3: amount over $200 → 2 approvals from S0FINANCELEADS". NULL: the tool has no rules.
ALTER TABLE approvals ADD COLUMN rule TEXT;

-- An approval a rule approved or denied when it was made asks no one: no card is posted.
DROP TRIGGER outbox_approval_requested;
CREATE TRIGGER outbox_approval_requested AFTER INSERT ON approvals
WHEN new.state = 'pending'
BEGIN
    INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
    VALUES ('approval_requested', new.id,
            (julianday('now') - 2440587.5) * 86400.0, (julianday('now') - 2440587.5) * 86400.0);
END;
