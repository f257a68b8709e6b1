-- While older workers run: safe. Older code finds unfinished compensations without the index it drops.
-- Recovery finds an unfinished rollback (or saga) by its intent: an `undo_started` audit
-- event with no `rollback` or `compensate` event after it. That finds one killed between two
-- undos as well as one killed inside a compensation, which the index on compensations left
-- `started` could not, so this index replaces it. Only intents are indexed: the lookup reads
-- one entry per rollback, not the audit log.
CREATE INDEX audit_events_undo_started ON audit_events (run_id, id)
    WHERE action = 'undo_started';
DROP INDEX effects_unfinished_undos;
