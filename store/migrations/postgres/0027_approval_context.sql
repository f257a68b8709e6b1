-- While older workers run: unsafe. Older code would run an approved call without checking its context again.
-- What an approver is shown beside the call (`runtime.approvals.context`): the facts the
-- tool's context function read when it was asked (and their digest, checked again before
-- the call runs), or why they could not be read; the agent's stated reason; and, for an
-- approval asked again, why (the facts changed, or the approval outlived its validity).
ALTER TABLE approvals ADD COLUMN context jsonb;
ALTER TABLE approvals ADD COLUMN context_error text;
ALTER TABLE approvals ADD COLUMN context_digest text;
ALTER TABLE approvals ADD COLUMN agent_reason text;
ALTER TABLE approvals ADD COLUMN reasked jsonb;
