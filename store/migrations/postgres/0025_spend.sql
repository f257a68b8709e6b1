-- While older workers run: unsafe. Older code reserves nothing against limits: its calls would pass them uncounted.
-- Limits that see history, and the budgets approvers hand out; see sqlite/0025.
CREATE TABLE spend_counters (
    counter text NOT NULL,
    key     text NOT NULL,
    bucket  bigint NOT NULL,
    amount  bigint NOT NULL DEFAULT 0,
    calls   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (counter, key, bucket)
);

CREATE TABLE spend_holds (
    id          bigserial PRIMARY KEY,
    counter     text NOT NULL,
    key         text NOT NULL,
    bucket      bigint NOT NULL,
    amount      bigint NOT NULL,
    calls       bigint NOT NULL,
    run_id      text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    call_id     text NOT NULL,
    approval_id text,
    state       text NOT NULL CHECK (state IN ('held', 'settled', 'released')),
    held_at     timestamptz NOT NULL,
    ended_at    timestamptz,
    why         text
);
CREATE UNIQUE INDEX spend_holds_once ON spend_holds (run_id, call_id, counter, key)
WHERE state <> 'released';
CREATE INDEX spend_holds_held ON spend_holds (run_id) WHERE state = 'held';

CREATE TABLE envelopes (
    id            text PRIMARY KEY,
    tool          text NOT NULL,
    condition     text NOT NULL,
    amount        text,
    max_amount    bigint,
    max_calls     bigint,
    used_amount   bigint NOT NULL DEFAULT 0,
    used_calls    bigint NOT NULL DEFAULT 0,
    author        text NOT NULL,
    reason        text NOT NULL,
    state         text NOT NULL CHECK (state IN ('proposed', 'active', 'revoked')),
    needs_second  boolean NOT NULL DEFAULT false,
    mode          text NOT NULL DEFAULT 'enforce' CHECK (mode IN ('enforce', 'shadow')),
    from_approval text,
    channel       text,
    message_ts    text,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    confirmed_by  text,
    confirmed_at  timestamptz,
    revoked_by    text,
    revoked_at    timestamptz,
    ended         text
);
CREATE INDEX envelopes_in_force ON envelopes (tool, expires_at) WHERE state = 'active';
CREATE INDEX envelopes_open ON envelopes (expires_at) WHERE ended IS NULL;

CREATE TABLE spend_limits (
    name       text PRIMARY KEY,
    definition text NOT NULL,
    changed_at timestamptz NOT NULL
);
