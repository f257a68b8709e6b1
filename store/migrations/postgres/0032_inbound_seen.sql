-- While older workers run: safe. It adds a table older code neither reads nor writes (an older
-- worker goes on remembering the requests it handled in its own memory only).
-- Requests from outside that a sender may deliver again (Slack's event ids, an interaction's
-- trigger), noted by whichever process handled one first, so a retry delivered to another
-- process is handled once; each kept until it expires.
CREATE TABLE inbound_seen (
    key        text PRIMARY KEY,
    seen_at    timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX inbound_seen_expiry ON inbound_seen (expires_at);
