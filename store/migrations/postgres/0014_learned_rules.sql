-- While older workers run: safe. Older code only never applies the learned rules.
-- Approval rules people make from a decision ("approve + similar"); see sqlite/0012.
CREATE TABLE learned_rules (
    id              text PRIMARY KEY,
    tool            text NOT NULL,
    condition       text NOT NULL,
    author          text NOT NULL,
    reason          text NOT NULL,
    state           text NOT NULL CHECK (state IN ('proposed', 'active', 'revoked')),
    needs_second    boolean NOT NULL DEFAULT false,
    from_approval   text,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    confirmed_by    text,
    confirmed_at    timestamptz,
    revoked_by      text,
    revoked_at      timestamptz,
    reminded_at     timestamptz,
    noted_until     timestamptz
);
CREATE INDEX learned_rules_by_tool ON learned_rules (tool, state);

CREATE INDEX approvals_by_learned_rule ON approvals ((rule ->> 'learned_id'))
WHERE rule IS NOT NULL;

CREATE INDEX audit_requests_by_tool ON audit_events ((detail ->> 'tool'), id)
WHERE action IN ('approval_requested', 'approval_auto_approved', 'approval_denied');
CREATE INDEX audit_events_by_approval ON audit_events (approval_id, id);
