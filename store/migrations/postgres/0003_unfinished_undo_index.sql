-- While older workers run: safe. It adds an index older code need not know of.
-- Recovery looks, every 30 seconds, for compensations a dead rollback left `started`. Only
-- those rows are indexed, so the lookup stays instant however long the ledger grows, and a
-- normal step's writes skip this index.
CREATE INDEX effects_unfinished_undos ON effects (run_id)
    WHERE compensates IS NOT NULL AND status = 'started';
