-- While older workers run: safe. It adds a table older code does not look at and a start_step that writes nothing where a reuse is to be recorded (older code's body then writes the step, without the record).
-- Effects two runs share (issue 40.2): a run handed another run's recorded effect (the same
-- idempotency key with the same arguments: the ledger's repeat in a lineage, or the outside
-- system's, which dedupes by the key, across lineages) relies on it. Each such reuse is a row
-- here, written in the transaction that hands the effect over (with its audit event), so a
-- rollback or a saga that would compensate the effect names every run that relies on it.
-- `undone_at`: when the effect was compensated all the same, and the run relying on it was
-- told (once). A run's rows go with the run (prune).
CREATE TABLE effect_reuses (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    call_id text NOT NULL,
    from_run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    from_call_id text NOT NULL,
    tool text NOT NULL,
    idempotency_key text NOT NULL,
    at timestamptz NOT NULL,
    undone_at timestamptz,
    PRIMARY KEY (run_id, call_id)
);
CREATE INDEX effect_reuses_by_origin ON effect_reuses (from_run_id, from_call_id);

-- A step that starts an effect another run made (the same key and arguments) is the body's
-- to write, which records the reuse: `signoff_start_step` writes nothing then, as it does for
-- what only Python decides. That form of the function stands in migration 0030 (its last).
