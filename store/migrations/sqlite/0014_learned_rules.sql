-- While older workers run: safe. Older code only never applies the learned rules.
-- Approval rules people make from a decision ("approve + similar"), beside those in
-- signoff.toml: each has an author, a reason and an expiry; a rule for an effect that cannot
-- be compensated starts `proposed` and is `active` only once a second rule-writer confirms
-- it. A rule is never deleted (revoking keeps it, for the audit trail). How often a rule
-- approved is counted from the approvals that cite it, not kept as a counter.
CREATE TABLE learned_rules (
    id              TEXT PRIMARY KEY,
    tool            TEXT NOT NULL,
    condition       TEXT NOT NULL,
    author          TEXT NOT NULL,
    reason          TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('proposed', 'active', 'revoked')),
    needs_second    INTEGER NOT NULL DEFAULT 0,
    from_approval   TEXT,
    created_at      REAL NOT NULL,
    expires_at      REAL NOT NULL,
    confirmed_by    TEXT,
    confirmed_at    REAL,
    revoked_by      TEXT,
    revoked_at      REAL,
    reminded_at     REAL,
    noted_until     REAL
);
CREATE INDEX learned_rules_by_tool ON learned_rules (tool, state);

-- The approvals a learned rule approved (its uses), found by the rule's id in their match.
CREATE INDEX approvals_by_learned_rule ON approvals (json_extract(rule, '$.learned_id'))
WHERE rule IS NOT NULL;

-- The backtest reads the newest requests for one tool, then the decisions on them.
CREATE INDEX audit_requests_by_tool ON audit_events (json_extract(detail, '$.tool'), id)
WHERE action IN ('approval_requested', 'approval_auto_approved', 'approval_denied');
CREATE INDEX audit_events_by_approval ON audit_events (approval_id, id);
