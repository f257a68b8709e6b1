-- While older workers run: safe. It adds a table older code does not look at.
-- Effects two runs share (issue 40.2): a run handed another run's recorded effect (the same
-- idempotency key with the same arguments: the ledger's repeat in a lineage, or the outside
-- system's, which dedupes by the key, across lineages) relies on it. Each such reuse is a row
-- here, written in the transaction that hands the effect over (with its audit event), so a
-- rollback or a saga that would compensate the effect names every run that relies on it.
-- `undone_at`: when the effect was compensated all the same, and the run relying on it was
-- told (once). A run's rows go with the run (prune).
CREATE TABLE effect_reuses (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    call_id TEXT NOT NULL,
    from_run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    from_call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    at REAL NOT NULL,
    undone_at REAL,
    PRIMARY KEY (run_id, call_id)
);
CREATE INDEX effect_reuses_by_origin ON effect_reuses (from_run_id, from_call_id);
