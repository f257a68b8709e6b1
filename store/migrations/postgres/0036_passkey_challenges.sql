-- While older workers run: safe. It adds a table older code neither reads nor writes (an older
-- worker goes on keeping its own challenges in memory, as before).
-- The WebAuthn challenges the approvals page issued and no answer has used yet (issue 43.3):
-- for whom and for what (registering, or approving one approval), until when. Taking one
-- deletes it, so whichever process an answer reaches uses a challenge once.
CREATE TABLE passkey_challenges (
    challenge  text PRIMARY KEY,
    person     text NOT NULL,
    purpose    text NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX passkey_challenges_expiry ON passkey_challenges (expires_at);
