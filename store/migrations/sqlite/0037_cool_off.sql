-- While older workers run: unsafe. Older code knows no cool-off: it would drive a run parked in one and run the approved call before the cool-off ends. Upgrade every worker before a policy sets cool_off.
-- Cool-off and undo (issue 42.6): an approved reversible call waits `cool_off` before it
-- runs (`cool_off` is 'waiting' until `cool_off_until`, by the database's clock; then 'ran',
-- or 'cancelled' by `cool_off_by`); once it ran, its compensator may undo it until
-- `undo_until`, once (`undone_by`, `undone_at`). Each change is one compare-and-set.
ALTER TABLE approvals ADD COLUMN cool_off TEXT;
ALTER TABLE approvals ADD COLUMN cool_off_until REAL;
ALTER TABLE approvals ADD COLUMN cool_off_by TEXT;
ALTER TABLE approvals ADD COLUMN undo_until REAL;
ALTER TABLE approvals ADD COLUMN undone_by TEXT;
ALTER TABLE approvals ADD COLUMN undone_at REAL;
CREATE INDEX approvals_cooling ON approvals (cool_off_until) WHERE cool_off = 'waiting';
