-- While older workers run: safe. It adds an index older code need not know of.
-- The state at a step finds that step's last checkpoint by index, so time travel reads the
-- rows it returns and not the whole run (it scanned every checkpoint of the run before).
CREATE INDEX checkpoints_by_step ON checkpoints (run_id, step, seq);
