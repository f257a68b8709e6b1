-- While older workers run: safe. It adds a function older code does not call.
-- `signoff_start_step`, the step that starts mutating effects in one round trip, was added
-- here; its body now stands once, in migration 0030, which creates it in its last form (and
-- drops the form an older Signoff left). Every database this Signoff migrates past 0019 goes
-- through 0030 in the same transaction, and 0030 is unsafe while older workers run, so no
-- worker could ever call the body this migration had (docs/architecture.md, "Migrations are
-- history").
SELECT 1;
