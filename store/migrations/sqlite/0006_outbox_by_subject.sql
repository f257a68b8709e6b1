-- While older workers run: safe. It adds an index older code need not know of.
-- Re-announcing open pages looks for the latest announcement of each: by subject and time.
CREATE INDEX outbox_by_subject ON outbox (subject_id, created_at);
