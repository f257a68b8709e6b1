-- While older workers run: safe. Older code looks effects up by key with or without reads in the index.
-- A read is never "done already": the ledger looks effects up by idempotency key only to
-- keep mutating calls from running twice. Leaving reads out of the key index saves a read
-- step one or two B-tree page writes per commit (keys are hashes: every insert lands on a
-- random leaf).
DROP INDEX effects_by_key;
CREATE INDEX effects_by_key ON effects (lineage_id, idempotency_key)
    WHERE reversibility <> 'read';
