-- While older workers run: safe. The masking function answers as before, faster.
-- Arguments with nothing marked sensitive are returned as they are, without rebuilding the
-- object key by key (the SQLite twin does the same in its effect audit trigger).
CREATE OR REPLACE FUNCTION signoff_masked(args jsonb, sensitive jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN sensitive = '[]'::jsonb THEN args ELSE (
        SELECT coalesce(jsonb_object_agg(
            key, CASE WHEN sensitive ? key THEN to_jsonb('[sensitive]'::text) ELSE value END
        ), '{}'::jsonb)
        FROM jsonb_each(args)) END
$$;
