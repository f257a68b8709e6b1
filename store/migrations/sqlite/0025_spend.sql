-- While older workers run: unsafe. Older code reserves nothing against limits: its calls would pass them uncounted.
-- Limits that see history, and the budgets approvers hand out (docs/policies.md).
--
-- `spend_counters`: what each limit's calls added up to, per key and bucket of its window
-- (a counter is a limit's name with its window's shape, `refunds@2592000s/86400`, or the
-- calendar day of a zone). Reading a limit sums the few buckets its window spans: never a
-- scan of history.
CREATE TABLE spend_counters (
    counter TEXT NOT NULL,
    key     TEXT NOT NULL,
    bucket  INTEGER NOT NULL,
    amount  INTEGER NOT NULL DEFAULT 0,
    calls   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (counter, key, bucket)
) WITHOUT ROWID;

-- What each call holds of a counter (or of an envelope, `counter` = 'envelope', `key` its
-- id): `held` from the transaction that let the call through (or approved it), `settled`
-- once its effect completed, `released` (given back, once: a compare-and-set on the state)
-- when it was declined, failed, was compensated or never ran.
CREATE TABLE spend_holds (
    id          INTEGER PRIMARY KEY,
    counter     TEXT NOT NULL,
    key         TEXT NOT NULL,
    bucket      INTEGER NOT NULL,
    amount      INTEGER NOT NULL,
    calls       INTEGER NOT NULL,
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    call_id     TEXT NOT NULL,
    approval_id TEXT,
    state       TEXT NOT NULL CHECK (state IN ('held', 'settled', 'released')),
    held_at     REAL NOT NULL,
    ended_at    REAL,
    why         TEXT
);
CREATE UNIQUE INDEX spend_holds_once ON spend_holds (run_id, call_id, counter, key)
WHERE state <> 'released';
CREATE INDEX spend_holds_held ON spend_holds (run_id) WHERE state = 'held';

-- Budgets an approver hands out: calls of `tool` for which `condition` (CEL) holds are
-- approved at once, citing the envelope, until it is used up (`used_amount`, `used_calls`
-- against its maxima), expires or is revoked. An envelope for an effect that cannot be
-- undone may wait, `proposed`, for a second writer. `channel`/`message_ts`: its live message.
CREATE TABLE envelopes (
    id            TEXT PRIMARY KEY,
    tool          TEXT NOT NULL,
    condition     TEXT NOT NULL,
    amount        TEXT,
    max_amount    INTEGER,
    max_calls     INTEGER,
    used_amount   INTEGER NOT NULL DEFAULT 0,
    used_calls    INTEGER NOT NULL DEFAULT 0,
    author        TEXT NOT NULL,
    reason        TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('proposed', 'active', 'revoked')),
    needs_second  INTEGER NOT NULL DEFAULT 0,
    mode          TEXT NOT NULL DEFAULT 'enforce' CHECK (mode IN ('enforce', 'shadow')),
    from_approval TEXT,
    channel       TEXT,
    message_ts    TEXT,
    created_at    REAL NOT NULL,
    expires_at    REAL NOT NULL,
    confirmed_by  TEXT,
    confirmed_at  REAL,
    revoked_by    TEXT,
    revoked_at    REAL,
    ended         TEXT
);
CREATE INDEX envelopes_in_force ON envelopes (tool, expires_at) WHERE state = 'active';
CREATE INDEX envelopes_open ON envelopes (expires_at) WHERE ended IS NULL;

-- Each limit's definition as the last process that started saw it: a change is audited.
CREATE TABLE spend_limits (
    name       TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    changed_at REAL NOT NULL
);
