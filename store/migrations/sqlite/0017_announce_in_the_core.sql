-- While older workers run: unsafe. Older code counts on the triggers it drops: its changes would go unannounced.
-- The outbox rows and audit events a change announces are written by the store's shared
-- core (`store/announce.py`), in the change's own transaction, on every backend: the
-- triggers that wrote them here (migrations 0004, 0008, 0009) and their PostgreSQL twins go.
-- Every write to these tables goes through the core, so no change loses its announcement;
-- upgrade every process before this migration runs (an older one would still count on them).
--
-- Kept as triggers:
-- - audit_events_append_only: it refuses an UPDATE from anything, including code and tools
--   that are not Signoff; the core never updates an event, so it cannot be the guard.
-- - audit_effect_ended: it needs the effect's status from before the UPDATE that finishes
--   it (an in-doubt effect retried into doubt again is no new event) with its arguments and
--   sensitivity, which that UPDATE does not return; reading them first would cost every
--   finished effect a statement (on PostgreSQL a round trip per step).
DROP TRIGGER outbox_approval_requested;
DROP TRIGGER outbox_approval_decided;
DROP TRIGGER outbox_approval_voted;
DROP TRIGGER outbox_approval_reminded;
DROP TRIGGER outbox_page_opened;
DROP TRIGGER outbox_page_acknowledged;
DROP TRIGGER outbox_run_finished;
DROP TRIGGER audit_approval_requested;
DROP TRIGGER audit_approval_escalated;
DROP TRIGGER audit_page_opened;
