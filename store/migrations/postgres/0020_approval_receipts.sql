-- While older workers run: safe. It adds a column older code neither reads nor writes.
-- The signed receipt of a decision (`runtime.approvals.receipts`), stored with the approval
-- once, by compare-and-set, as the JSON text that was signed.
ALTER TABLE approvals ADD COLUMN receipt text;
