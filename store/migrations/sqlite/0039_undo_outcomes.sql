-- While older workers run: unsafe. Older code offers Undo when the call is claimed to run and marks a call undone at the click, before its compensation ran or if it fails; it knows neither the effect's end nor an undo in flight.
-- Undo tells the truth (issue 42.6): the undo window opens when the call's effect completed,
-- not when the call was claimed to run. The claim keeps the window's length (`undo_seconds`);
-- the effect's end (`ran_outcome`: completed, failed, in_doubt) commits with the effect's
-- result and opens the window (`undo_until`) only on `completed`. An undo is claimed by
-- `undoing_by` and ends either undone (`undone_by`, `undone_at`, in the transaction of its
-- end) or failed (`undo_error`: why; the claim is released, so a person may try again).
-- Calls that ran before: their effect's end is read from the ledger.
ALTER TABLE approvals ADD COLUMN undo_seconds REAL;
ALTER TABLE approvals ADD COLUMN ran_outcome TEXT;
ALTER TABLE approvals ADD COLUMN undoing_by TEXT;
ALTER TABLE approvals ADD COLUMN undo_error TEXT;
UPDATE approvals SET ran_outcome = (
    SELECT e.status FROM effects e
    WHERE e.run_id = approvals.run_id AND e.call_id = approvals.call_id
      AND e.status IN ('completed', 'failed', 'in_doubt'))
WHERE cool_off = 'ran';
