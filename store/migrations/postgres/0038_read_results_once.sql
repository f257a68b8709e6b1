-- While older workers run: unsafe. Older code reads a read effect's result from its row: for a row that keeps only `result_seq` it would read none (a resumed call answered with null).
-- A read effect's result is stored once (issue 46): in the tool message of the checkpoint
-- that committed with it, not again in the effect's row. `result_seq` is that checkpoint's
-- seq; NULL: the result is in `result` (a mutating effect, a result sent to the model as
-- plain text, or one whose message differs). The store reads it back from the message
-- (`store.read_results`), so every surface shows it as before. Existing rows are converted
-- where a tool message of the run, at or after the effect's step, holds the JSON in
-- `result`; any other keeps its copy. (`signoff_start_step`, which finishes the reads of a
-- step that starts a mutating effect, keeps their copies: it is not changed here.)
ALTER TABLE effects ADD COLUMN result_seq integer;

CREATE FUNCTION signoff_jsonb_or_null(p_text text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN p_text::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;  -- a tool message that is not JSON (a result sent as plain text)
END;
$$;

UPDATE effects e
SET result_seq = (
    SELECT c.seq FROM checkpoints c, jsonb_array_elements(c.messages) m
    WHERE c.run_id = e.run_id AND c.step >= e.step
      AND m ->> 'role' = 'tool' AND m ->> 'tool_call_id' = e.call_id
      AND signoff_jsonb_or_null(m ->> 'content') = e.result
    ORDER BY c.seq LIMIT 1)
WHERE e.reversibility = 'read' AND e.status = 'completed' AND e.result IS NOT NULL;
UPDATE effects SET result = NULL WHERE result_seq IS NOT NULL;

DROP FUNCTION signoff_jsonb_or_null(text);
