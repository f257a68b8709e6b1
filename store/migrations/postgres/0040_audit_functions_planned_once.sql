-- While older workers run: safe. The two functions answer as before, for older code's writes too; only their language changes.
-- The audit chain's head and an effect's masked arguments in PL/pgSQL (issue 44.4). As SQL
-- functions with a subquery they cannot be inlined, so each call from a trigger (every
-- audit event's link at commit, every effect's end) parsed and planned their bodies again;
-- a PL/pgSQL function keeps its plans for the session. One audit event's commit cost 0.55 ms
-- of the server's CPU and 2.8 ms of wall, 0.35-0.42 and 1.3 ms with these.
CREATE OR REPLACE FUNCTION signoff_audit_head() RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN coalesce(
        (SELECT hash FROM audit_events WHERE commit_seq IS NOT NULL
         ORDER BY commit_seq DESC LIMIT 1),
        (SELECT hash FROM audit_anchors ORDER BY seq DESC LIMIT 1),
        repeat('0', 64));
END;
$$;

CREATE OR REPLACE FUNCTION signoff_masked(args jsonb, sensitive jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF sensitive = '[]'::jsonb THEN
        RETURN args;
    END IF;
    RETURN (
        SELECT coalesce(jsonb_object_agg(
            key, CASE WHEN sensitive ? key THEN to_jsonb('[sensitive]'::text) ELSE value END
        ), '{}'::jsonb)
        FROM jsonb_each(args));
END;
$$;
