-- While older workers run: unsafe. Older code would judge decisions by its own configuration, not the approval's authority.
-- Who decides an approval, fixed when it is asked (JSON: the policy's name, the rule that
-- chose it, its settings, their digest and the asking worker's configuration digest), so
-- every process and every door judges a decision by the same record, never by its own
-- signoff.toml. An approval still pending from before this migration has none yet: the
-- first process that opens the database with its policies fills it in from the policy in
-- force (marked `filled`, logged and audited as `authority_filled`), and so does
-- `signoff db migrate`.
ALTER TABLE approvals ADD COLUMN authority TEXT;
CREATE INDEX approvals_pending_without_authority ON approvals (created_at)
    WHERE state = 'pending' AND authority IS NULL;

-- Each `signoff serve` process says which configuration it decides new approvals by;
-- `/readyz`, `/metrics` and `signoff doctor` report workers that disagree.
CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    config_digest TEXT NOT NULL,
    started_at REAL NOT NULL,
    seen_at REAL NOT NULL
);
