-- While older workers run: safe. It adds columns and an index older code neither reads nor writes.
-- Callers that leave are let go (issue 40.5). `requester_token` is the API token that asked
-- for an approval (`token:<name>`): only it may withdraw the request. `waiter_until` is the
-- heartbeat of whoever waits for the answer (each long poll or event stream moves it on);
-- once it lapses, the scheduler sets `waiter_left_at` and the card says nobody waits now.
-- The partial index holds only the pending approvals someone waits on.
ALTER TABLE approvals ADD COLUMN requester_token text;
ALTER TABLE approvals ADD COLUMN waiter_until timestamptz;
ALTER TABLE approvals ADD COLUMN waiter_left_at timestamptz;
CREATE INDEX approvals_pending_waiter ON approvals (waiter_until) WHERE state = 'pending';
