-- While older workers run: safe. It adds tables and a column older code does not look at, and the e-mail rows (`email_*`) it puts in the outbox are claimed by no older sender (a sender claims nothing once the schema is newer than it knows).
-- Approvers beyond Slack (issue 43): e-mailed decision links are single-use, so each one
-- used is a row here (its nonce), written before the decision it carries is cast; a person
-- away names a delegate until a time (`away`), and a decision a delegate made for them says
-- whom for (`approvals.decided_for`). An approval's rows go with the approval (prune).
CREATE TABLE email_links (
    nonce TEXT PRIMARY KEY,
    approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    person TEXT NOT NULL,
    decision TEXT NOT NULL,
    used_at REAL NOT NULL
);
CREATE TABLE away (
    person TEXT PRIMARY KEY,
    until REAL NOT NULL,
    delegate TEXT NOT NULL,
    set_at REAL NOT NULL
);
CREATE INDEX away_by_delegate ON away (delegate);
ALTER TABLE approvals ADD COLUMN decided_for TEXT;
