-- While older workers run: safe. It creates the schema: no older worker exists.
-- Runs, their append-only history, the effect ledger, approvals, facts, pages and audit.

CREATE TABLE runs (
    id               TEXT PRIMARY KEY,
    agent            TEXT NOT NULL,
    task             TEXT NOT NULL,
    status           TEXT NOT NULL,
    budget           TEXT NOT NULL,
    requested_by     TEXT,
    lineage_id       TEXT NOT NULL,
    parent_id        TEXT,
    fork_step        INTEGER,
    dry_run          INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at REAL,
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL
);
CREATE INDEX runs_by_status ON runs (status, created_at);

-- `messages` is last so that scans of the small columns stay on the row's first page.
CREATE TABLE checkpoints (
    run_id        TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    step          INTEGER NOT NULL,
    snapshot      INTEGER NOT NULL,
    status        TEXT NOT NULL,
    steps         INTEGER NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost          REAL NOT NULL,
    stop_reason   TEXT,
    error         TEXT,
    created_at    REAL NOT NULL,
    messages      TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
-- Loading a state starts from the last snapshot at or before it.
CREATE INDEX checkpoints_snapshots ON checkpoints (run_id, seq) WHERE snapshot = 1;

CREATE TABLE effects (
    id              INTEGER PRIMARY KEY,
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    call_id         TEXT NOT NULL,
    lineage_id      TEXT NOT NULL,
    step            INTEGER NOT NULL,
    tool            TEXT NOT NULL,
    reversibility   TEXT NOT NULL,
    compensator     TEXT,
    idempotency_key TEXT NOT NULL,
    idempotent      INTEGER NOT NULL,
    status          TEXT NOT NULL,
    approval_id     TEXT,
    compensates     TEXT,
    compensated_by  TEXT,
    started_at      REAL NOT NULL,
    finished_at     REAL,
    error           TEXT,
    args            TEXT NOT NULL,
    result          TEXT,
    UNIQUE (run_id, call_id)
);
CREATE INDEX effects_by_key ON effects (lineage_id, idempotency_key);

CREATE TABLE approvals (
    id                 TEXT PRIMARY KEY,
    run_id             TEXT REFERENCES runs (id) ON DELETE CASCADE,
    call_id            TEXT,
    lineage_id         TEXT,
    idempotency_key    TEXT,
    tool               TEXT NOT NULL,
    args               TEXT NOT NULL,
    approved_args      TEXT,
    policy             TEXT NOT NULL,
    state              TEXT NOT NULL,
    decided_by         TEXT,
    decided_at         REAL,
    reason             TEXT,
    requested_by       TEXT,
    required_approvals INTEGER NOT NULL,
    deadline           REAL,
    next_reminder_at   REAL,
    reminders_sent     INTEGER NOT NULL,
    escalated          INTEGER NOT NULL,
    channel            TEXT,
    message_ts         TEXT,
    delivery           TEXT NOT NULL,
    callback_url       TEXT,
    callback_status    TEXT,
    created_at         REAL NOT NULL
);
CREATE INDEX approvals_by_run ON approvals (run_id);
CREATE INDEX approvals_by_key ON approvals (lineage_id, idempotency_key);
CREATE INDEX approvals_by_state ON approvals (state, created_at);
CREATE INDEX approvals_pending_deadline ON approvals (deadline) WHERE state = 'pending';
CREATE INDEX approvals_pending_reminder ON approvals (next_reminder_at) WHERE state = 'pending';

CREATE TABLE approval_votes (
    approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL,
    at          REAL NOT NULL,
    PRIMARY KEY (approval_id, user_id)
);

CREATE TABLE facts (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    source     TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX facts_by_source ON facts (source);

CREATE TABLE pages (
    id              TEXT PRIMARY KEY,
    run_id          TEXT REFERENCES runs (id) ON DELETE CASCADE,
    call_id         TEXT,
    tool            TEXT,
    reason          TEXT NOT NULL,
    detail          TEXT NOT NULL,
    channel         TEXT,
    message_ts      TEXT,
    delivery        TEXT NOT NULL,
    acknowledged_by TEXT,
    acknowledged_at REAL,
    created_at      REAL NOT NULL
);
CREATE INDEX pages_open ON pages (created_at) WHERE acknowledged_by IS NULL;
CREATE INDEX pages_by_run ON pages (run_id);

-- Audit events outlive pruned runs: no foreign key.
CREATE TABLE audit_events (
    id          INTEGER PRIMARY KEY,
    at          REAL NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    run_id      TEXT,
    approval_id TEXT,
    detail      TEXT NOT NULL
);
CREATE INDEX audit_events_by_run ON audit_events (run_id, id);
