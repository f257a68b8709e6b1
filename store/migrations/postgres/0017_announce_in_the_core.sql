-- While older workers run: unsafe. Older code counts on the triggers it drops: its changes would go unannounced.
-- The outbox rows (with their NOTIFY) and audit events a change announces are written by
-- the store's shared core (`store/announce.py`), in the change's own transaction, on every
-- backend: the triggers that wrote them here (migrations 0004, 0008, 0009) and their SQLite
-- twins go. Every write to these tables goes through the core, so no change loses its
-- announcement; upgrade every process before this migration runs (an older one would still
-- count on them).
--
-- Kept as triggers:
-- - audit_events_append_only: it refuses an UPDATE from anything, including code and tools
--   that are not Signoff; the core never updates an event, so it cannot be the guard.
-- - audit_events_commit_seq (migration 0016): an event's place in the commit order can only
--   be drawn at commit, under a lock held to the transaction's end; a statement inside the
--   transaction runs before commit, when concurrent transactions' order is not known yet.
-- - audit_effect_ended (and signoff_masked): it needs the effect's status from before the
--   UPDATE that finishes it (an in-doubt effect retried into doubt again is no new event)
--   with its arguments and sensitivity, which that UPDATE does not return; reading them
--   first would cost every finished effect a round trip.
DROP TRIGGER outbox_approval_requested ON approvals;
DROP TRIGGER outbox_approval_decided ON approvals;
DROP TRIGGER outbox_approval_voted ON approval_votes;
DROP TRIGGER outbox_approval_reminded ON approvals;
DROP TRIGGER outbox_page_opened ON pages;
DROP TRIGGER outbox_page_acknowledged ON pages;
DROP TRIGGER outbox_run_finished ON runs;
DROP TRIGGER audit_approval_requested ON approvals;
DROP TRIGGER audit_approval_escalated ON approvals;
DROP TRIGGER audit_page_opened ON pages;
DROP FUNCTION signoff_outbox_announce();
DROP FUNCTION signoff_outbox_reminded();
DROP FUNCTION signoff_outbox_run_finished();
DROP FUNCTION signoff_outbox_write(text, text, jsonb);
DROP FUNCTION signoff_audit_approval_requested();
DROP FUNCTION signoff_audit_approval_escalated();
DROP FUNCTION signoff_audit_page_opened();
