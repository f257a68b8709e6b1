-- While older workers run: safe. It adds columns older code neither reads nor writes.
-- Which schema the worker holding a run's lease runs (the newest migration it knows), said
-- when it takes the lease, so `signoff db migrate` can tell which lease holders a migration
-- would leave behind (docs/operations.md, "Upgrades"). `lease_schema_epoch` is the epoch it
-- was said in: a lease taken since by a Signoff from before workers said so (which leaves
-- both as they were) no longer matches, and counts as one that cannot step aside.
ALTER TABLE runs ADD COLUMN lease_schema INTEGER;
ALTER TABLE runs ADD COLUMN lease_schema_epoch INTEGER;
