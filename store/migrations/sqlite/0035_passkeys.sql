-- While older workers run: safe. It adds a table older code does not look at.
-- Passkeys people registered on the approvals page (issue 43.3), for approvals whose policy
-- requires step-up: the WebAuthn credential's id and public key, whose it is, and its
-- signature counter (a signature whose counter does not grow is a cloned key's, refused).
CREATE TABLE passkeys (
    id TEXT PRIMARY KEY,
    person TEXT NOT NULL,
    public_key TEXT NOT NULL,
    sign_count INTEGER NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX passkeys_by_person ON passkeys (person);
