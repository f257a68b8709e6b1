-- While older workers run: safe. Older code keeps no resume state; it reads approvals as before.
-- What an agent on another stack needs to resume once the approval is decided (for the
-- OpenAI Agents SDK, its paused RunState as text): opaque to Signoff, kept as the first
-- request gave it, shown to no person, answered only to API clients reading the approval.
ALTER TABLE approvals ADD COLUMN resume_state TEXT;
