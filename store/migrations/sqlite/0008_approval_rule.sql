-- The approval rule an approval was created under (JSON: which rule, why, and the policy it
-- chose), so a rule changed later never changes who decides it, and every surface can say
-- "rule 3: amount over $200 → 2 approvals from S0FINANCELEADS". NULL: the tool has no rules.
ALTER TABLE approvals ADD COLUMN rule TEXT;
