-- While older workers run: unsafe. Older code takes leases without a new epoch: fencing could not stop it.
-- Fencing: every lease taken on a run has an epoch one higher than the last, and a worker's
-- writes for the run carry the epoch it holds; a write from an older epoch is refused.
ALTER TABLE runs ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0;
