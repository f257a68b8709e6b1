-- Re-announcing open pages looks for the latest announcement of each: by subject and time.
CREATE INDEX outbox_by_subject ON outbox (subject_id, created_at);
