-- While older workers run: unsafe. Older code would judge decisions by its own policies, not the approval's rule.
-- The approval rule an approval was created under (JSON: which rule, why, and the policy it
-- chose), so a rule changed later never changes who decides it, and every surface can say
-- "rule 3: amount over $200 → 2 approvals from S0FINANCELEADS". NULL: the tool has no rules.
ALTER TABLE approvals ADD COLUMN rule jsonb;

-- An approval a rule approved or denied when it was made asks no one: no card is posted.
DROP TRIGGER outbox_approval_requested ON approvals;
CREATE TRIGGER outbox_approval_requested AFTER INSERT ON approvals
FOR EACH ROW WHEN (new.state = 'pending')
EXECUTE FUNCTION signoff_outbox_announce('approval_requested', 'id');
