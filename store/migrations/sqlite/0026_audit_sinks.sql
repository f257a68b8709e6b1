-- While older workers run: safe. It adds a table older code neither reads nor writes.
-- Where each audit sink is in the trail (`bot.audit_sink`): the last event it delivered, in
-- commit order, and which process streams it (a lease that lapses).
CREATE TABLE audit_sinks (
    name         TEXT PRIMARY KEY,
    cursor       INTEGER NOT NULL DEFAULT 0,
    owner        TEXT,
    lease_until  REAL,
    delivered_at REAL
);
