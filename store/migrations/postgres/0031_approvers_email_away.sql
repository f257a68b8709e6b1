-- While older workers run: safe. It adds tables and a column older code does not look at, and the e-mail rows (`email_*`) it puts in the outbox are claimed by no older sender (a sender claims nothing once the schema is newer than it knows).
-- Approvers beyond Slack (issue 43): e-mailed decision links are single-use, so each one
-- used is a row here (its nonce), written before the decision it carries is cast; a person
-- away names a delegate until a time (`away`), and a decision a delegate made for them says
-- whom for (`approvals.decided_for`). An approval's rows go with the approval (prune).
CREATE TABLE email_links (
    nonce text PRIMARY KEY,
    approval_id text NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    person text NOT NULL,
    decision text NOT NULL,
    used_at timestamptz NOT NULL
);
CREATE TABLE away (
    person text PRIMARY KEY,
    until timestamptz NOT NULL,
    delegate text NOT NULL,
    set_at timestamptz NOT NULL
);
CREATE INDEX away_by_delegate ON away (delegate);
ALTER TABLE approvals ADD COLUMN decided_for text;
