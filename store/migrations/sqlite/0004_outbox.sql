-- While older workers run: safe. Triggers write the outbox rows of every change, older code's too.
-- The outbox: what must be told to people (Slack cards, updates, thread notes, pages).
-- Triggers write a row in the same transaction as the change it announces, whichever code
-- path made the change, so a crash can delay a notification but never lose it. A sender
-- claims rows in order per subject, delivers them and marks them sent.

CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY,
    topic           TEXT NOT NULL,
    subject_id      TEXT NOT NULL,
    detail          TEXT NOT NULL DEFAULT '{}',
    created_at      REAL NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    claimed_by      TEXT,
    claimed_until   REAL,
    sent_at         REAL,
    error           TEXT
);
-- A subject's rows go out in order: the sender looks for an earlier unsent row of it.
CREATE INDEX outbox_unsent_by_subject ON outbox (subject_id, id) WHERE sent_at IS NULL;
CREATE INDEX outbox_unsent_due ON outbox (next_attempt_at) WHERE sent_at IS NULL;

CREATE TRIGGER outbox_approval_requested AFTER INSERT ON approvals
BEGIN
    INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
    VALUES ('approval_requested', new.id,
            (julianday('now') - 2440587.5) * 86400.0, (julianday('now') - 2440587.5) * 86400.0);
END;

CREATE TRIGGER outbox_approval_decided AFTER UPDATE OF state ON approvals
WHEN new.state <> old.state
BEGIN
    INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
    VALUES ('approval_decided', new.id,
            (julianday('now') - 2440587.5) * 86400.0, (julianday('now') - 2440587.5) * 86400.0);
END;

CREATE TRIGGER outbox_approval_voted AFTER INSERT ON approval_votes
BEGIN
    INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
    VALUES ('approval_voted', new.approval_id,
            (julianday('now') - 2440587.5) * 86400.0, (julianday('now') - 2440587.5) * 86400.0);
END;

-- A reminder, or an escalation (by reminders or at an escalating deadline).
CREATE TRIGGER outbox_approval_reminded AFTER UPDATE OF reminders_sent, escalated ON approvals
WHEN new.state = 'pending'
 AND (new.reminders_sent > old.reminders_sent OR (new.escalated = 1 AND old.escalated = 0))
BEGIN
    INSERT INTO outbox (topic, subject_id, detail, created_at, next_attempt_at)
    VALUES ('approval_reminded', new.id,
            json_object('reminders_sent', new.reminders_sent,
                        'escalated', json(CASE WHEN new.escalated = 1 AND old.escalated = 0
                                          THEN 'true' ELSE 'false' END)),
            (julianday('now') - 2440587.5) * 86400.0, (julianday('now') - 2440587.5) * 86400.0);
END;

CREATE TRIGGER outbox_page_opened AFTER INSERT ON pages
BEGIN
    INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
    VALUES ('page_opened', new.id,
            (julianday('now') - 2440587.5) * 86400.0, (julianday('now') - 2440587.5) * 86400.0);
END;

CREATE TRIGGER outbox_page_acknowledged AFTER UPDATE OF acknowledged_by ON pages
WHEN old.acknowledged_by IS NULL AND new.acknowledged_by IS NOT NULL
BEGIN
    INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
    VALUES ('page_acknowledged', new.id,
            (julianday('now') - 2440587.5) * 86400.0, (julianday('now') - 2440587.5) * 86400.0);
END;

CREATE TRIGGER outbox_run_finished AFTER UPDATE OF status ON runs
WHEN new.status <> old.status AND new.status IN ('done', 'failed', 'cancelled')
BEGIN
    INSERT INTO outbox (topic, subject_id, detail, created_at, next_attempt_at)
    VALUES ('run_finished', new.id, json_object('status', new.status),
            (julianday('now') - 2440587.5) * 86400.0, (julianday('now') - 2440587.5) * 86400.0);
END;
