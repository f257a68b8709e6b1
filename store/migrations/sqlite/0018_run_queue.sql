-- While older workers run: safe. Runs older code creates or lets go wait for the next requeue pass.
-- The run queue: a run that needs a driver and has none (just created, its last approval
-- decided, its lease lapsed) is ready from `ready_at` on, and any worker with room claims
-- the oldest ready runs in the transaction that takes their leases. The partial index
-- holds only the few ready runs, never the history.
ALTER TABLE runs ADD COLUMN ready_at REAL;
CREATE INDEX runs_ready ON runs (ready_at, id) WHERE ready_at IS NOT NULL;
-- Runs mid-flight with no lease when this migration runs wait in the queue.
UPDATE runs SET ready_at = updated_at WHERE status = 'running' AND lease_owner IS NULL;
