-- While older workers run: unsafe. Older code reads a read effect's result from its row: for a row that keeps only `result_seq` it would read none (a resumed call answered with null).
-- A read effect's result is stored once (issue 46): in the tool message of the checkpoint
-- that committed with it, not again in the effect's row. `result_seq` is that checkpoint's
-- seq; NULL: the result is in `result` (a mutating effect, a result sent to the model as
-- plain text, or one whose message differs). The store reads it back from the message
-- (`store.read_results`), so every surface shows it as before. Existing rows are converted
-- where a tool message of the run, at or after the effect's step, holds exactly the JSON
-- text in `result`; any other keeps its copy.
ALTER TABLE effects ADD COLUMN result_seq INTEGER;
UPDATE effects
SET result_seq = (
    SELECT c.seq FROM checkpoints c, json_each(c.messages) m
    WHERE c.run_id = effects.run_id AND c.step >= effects.step
      AND json_extract(m.value, '$.role') = 'tool'
      AND json_extract(m.value, '$.tool_call_id') = effects.call_id
      AND json_extract(m.value, '$.content') = effects.result
    ORDER BY c.seq LIMIT 1)
WHERE reversibility = 'read' AND status = 'completed' AND result IS NOT NULL;
UPDATE effects SET result = NULL WHERE result_seq IS NOT NULL;
