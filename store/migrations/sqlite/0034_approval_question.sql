-- While older workers run: safe. Older code reads a question as the decline it is stored as (the agent is told the call was declined instead of asked), and asks nothing it would not.
-- A question back to the agent (issue 43.6): an approver asks instead of deciding; the
-- approval is declined with the question, the agent reads it as the tool's result, and its
-- next call of the same tool is asked again (a question is not a "no" the lineage repeats).
ALTER TABLE approvals ADD COLUMN question TEXT;
