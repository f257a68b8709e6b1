-- While older workers run: unsafe. Older code writes and compares an effect's digests as hex text: its writes would be refused (text into bytea) and its start_step is replaced.
-- An effect's digests as their 32 raw bytes (issue 46): `args_digest` is the SHA-256 of the
-- canonical arguments it runs with, `asked_digest` that of the arguments proposed, kept only
-- when an approver's edit made them differ (NULL: the same). Every surface still shows
-- `sha256:<hex>`; the store converts on the way in and out. A value not written as
-- `sha256:<hex>` becomes NULL, which reads as "compute it from the arguments".
UPDATE effects SET asked_digest = NULL WHERE asked_digest = args_digest;
ALTER TABLE effects
    ALTER COLUMN args_digest TYPE bytea USING
        CASE WHEN args_digest LIKE 'sha256:%' THEN decode(substr(args_digest, 8), 'hex') END,
    ALTER COLUMN asked_digest TYPE bytea USING
        CASE WHEN asked_digest LIKE 'sha256:%' THEN decode(substr(asked_digest, 8), 'hex') END;

-- `signoff_start_step` takes the digests as bytes. Its earlier forms (migrations 0019 and
-- 0029, text digests) are dropped where an older Signoff left them; this is its one body.
-- A step that starts mutating effects, in one round trip (docs/scale-out.md): what the
-- transaction body of `store.core.commit` does for such a batch (the lease and seq checks,
-- the checkpoints, the ledger's locks, the finished effects, each start's claim of its key,
-- the audit events), as one function the store calls in a statement of its own. READ
-- COMMITTED takes a snapshot for each statement in it, so the look-ups after the locks see
-- what another claimer of the same key committed while this one waited, as the body's own
-- statements do. A check that fails (or a case the body decides with what only Python knows)
-- divides by zero, which aborts everything written; the store then runs the body, which says
-- why. It returns the calls not started: each one's reason and the ledger row (its run and
-- call) that stopped it, and the keys of those started under a later generation of theirs.
DROP FUNCTION IF EXISTS signoff_start_step(
    text, text, bigint, int, text, timestamptz,
    int[], int[], bool[], text[], int[], bigint[], bigint[], float8[], text[], text[],
    timestamptz[], jsonb[], bigint[],
    text[], text[], jsonb[], text[], timestamptz[],
    text[], text[], int[], text[], text[], text[], text[], bool[], text[], text[],
    timestamptz[], jsonb[], jsonb[], text[], text[],
    timestamptz[], text[], text[], text[], text[], jsonb[],
    text[], text[]);
CREATE FUNCTION signoff_start_step(
    p_run_id text, p_owner text, p_epoch bigint, p_first_seq int, p_status text,
    p_updated_at timestamptz,
    cp_seq int[], cp_step int[], cp_snapshot bool[], cp_status text[], cp_steps int[],
    cp_input_tokens bigint[], cp_output_tokens bigint[], cp_cost float8[],
    cp_stop_reason text[], cp_error text[], cp_created_at timestamptz[], cp_messages jsonb[],
    cp_cached_input_tokens bigint[],
    fin_call_id text[], fin_status text[], fin_result jsonb[], fin_error text[],
    fin_finished_at timestamptz[],
    st_call_id text[], st_lineage_id text[], st_step int[], st_tool text[],
    st_reversibility text[], st_compensator text[], st_idempotency_key text[],
    st_idempotent bool[], st_approval_id text[], st_compensates text[],
    st_started_at timestamptz[], st_args jsonb[], st_sensitive jsonb[], st_args_digest bytea[],
    st_asked_digest bytea[],
    ev_at timestamptz[], ev_actor text[], ev_action text[], ev_run_id text[],
    ev_approval_id text[], ev_detail jsonb[],
    p_lineages text[], p_keys text[]
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_ok boolean;
    v_count int;
    v_key text;
    v_generation int;
    v_found effects%ROWTYPE;
    v_refused jsonb := '{}'::jsonb;
    v_keys jsonb := '{}'::jsonb;
BEGIN
    SELECT (p_owner IS NULL OR r.lease_owner = p_owner)
           AND (p_owner IS NULL OR p_epoch IS NULL OR r.lease_epoch = p_epoch)
           AND (cardinality(cp_seq) = 0
                OR (SELECT max(c.seq) FROM checkpoints c WHERE c.run_id = p_run_id) = p_first_seq - 1)
      INTO v_ok FROM runs r WHERE r.id = p_run_id FOR UPDATE;
    IF v_ok IS NOT TRUE THEN
        PERFORM 1 / 0;  -- the lease or the seq: the body says which
    END IF;
    INSERT INTO checkpoints (run_id, seq, step, snapshot, status, steps, input_tokens,
                             output_tokens, cost, stop_reason, error, created_at, messages,
                             cached_input_tokens)
    SELECT p_run_id, c.* FROM unnest(cp_seq, cp_step, cp_snapshot, cp_status, cp_steps,
        cp_input_tokens, cp_output_tokens, cp_cost, cp_stop_reason, cp_error, cp_created_at,
        cp_messages, cp_cached_input_tokens) AS c;
    IF cardinality(cp_seq) > 0 THEN
        UPDATE runs r SET status = p_status, updated_at = p_updated_at
        WHERE r.id = p_run_id AND r.status <> p_status;
    END IF;

    PERFORM pg_advisory_xact_lock(hashtextextended('signoff:lineage:' || l.id, 0))
    FROM unnest(p_lineages) WITH ORDINALITY AS l(id, n) ORDER BY l.n;
    PERFORM pg_advisory_xact_lock(hashtextextended('signoff:key:' || k.id, 0))
    FROM unnest(p_keys) WITH ORDINALITY AS k(id, n) ORDER BY k.n;

    WITH finished AS (
        UPDATE effects e
        SET status = f.status, result = f.result, error = f.error, finished_at = f.finished_at
        FROM unnest(fin_call_id, fin_status, fin_result, fin_error, fin_finished_at)
             AS f(call_id, status, result, error, finished_at)
        WHERE e.run_id = p_run_id AND e.call_id = f.call_id
          AND e.status IN ('started', 'in_doubt')
        RETURNING e.call_id, e.status, e.compensates
    ), compensated AS (
        UPDATE effects e SET compensated_by = f.call_id
        FROM finished f
        WHERE f.compensates IS NOT NULL AND f.status = 'completed'
          AND e.run_id = p_run_id AND e.call_id = f.compensates
    )
    SELECT count(*) INTO v_count FROM finished;
    IF v_count <> cardinality(fin_call_id) THEN
        PERFORM 1 / 0;  -- an effect not in flight
    END IF;

    FOR i IN 1 .. coalesce(cardinality(st_call_id), 0) LOOP
        v_key := st_idempotency_key[i];
        IF st_reversibility[i] <> 'read' THEN
            -- the key: a completed effect makes this a repeat; one undone since, a new generation
            v_generation := 1;
            LOOP
                SELECT * INTO v_found FROM effects e
                WHERE e.lineage_id = st_lineage_id[i] AND e.idempotency_key = v_key
                  AND e.reversibility <> 'read' AND e.status = 'completed'
                ORDER BY e.compensated_by IS NOT NULL, e.id LIMIT 1;
                EXIT WHEN NOT FOUND OR v_found.compensated_by IS NULL;
                v_generation := v_generation + 1;
                v_key := st_idempotency_key[i] || '#' || v_generation;
            END LOOP;
            IF FOUND AND v_found.compensated_by IS NULL THEN
                IF v_found.args_digest IS NULL THEN
                    PERFORM 1 / 0;  -- a digest only Python computes: the body decides
                END IF;
                IF v_found.args_digest = st_args_digest[i] AND v_found.run_id <> p_run_id THEN
                    PERFORM 1 / 0;  -- another run's effect handed to this one: the body records it
                END IF;
                v_refused := v_refused || jsonb_build_object(st_call_id[i], jsonb_build_array(
                    CASE WHEN v_found.args_digest = st_args_digest[i] THEN 'preempted'
                         ELSE 'conflicts' END, v_found.run_id, v_found.call_id));
                CONTINUE;
            END IF;
            -- the same key in any lineage with other arguments, that may have happened
            SELECT * INTO v_found FROM effects e
            WHERE e.idempotency_key = v_key AND e.reversibility <> 'read'
              AND e.args_digest IS NOT NULL AND e.args_digest <> st_args_digest[i]
              AND (e.status IN ('started', 'in_doubt')
                   OR (e.status = 'completed' AND e.compensated_by IS NULL))
            ORDER BY e.id DESC LIMIT 1;
            IF FOUND AND (v_found.run_id, v_found.call_id) <> (p_run_id, st_call_id[i]) THEN
                v_refused := v_refused
                    || jsonb_build_object(st_call_id[i], jsonb_build_array('conflicts', v_found.run_id, v_found.call_id));
                CONTINUE;
            END IF;
            -- the same key with the same arguments in another lineage, that may have happened:
            -- this run relies on that effect, which the body records
            PERFORM 1 FROM effects e
            WHERE e.idempotency_key = v_key AND e.reversibility <> 'read'
              AND e.lineage_id <> st_lineage_id[i] AND e.args_digest = st_args_digest[i]
              AND (e.status IN ('started', 'in_doubt')
                   OR (e.status = 'completed' AND e.compensated_by IS NULL));
            IF FOUND THEN
                PERFORM 1 / 0;
            END IF;
            -- the same effect running or in doubt in the lineage
            IF NOT st_idempotent[i] THEN
                SELECT * INTO v_found FROM effects e
                WHERE e.lineage_id = st_lineage_id[i] AND e.idempotency_key = v_key
                  AND e.reversibility <> 'read' AND e.status IN ('started', 'in_doubt')
                ORDER BY e.id LIMIT 1;
                IF FOUND AND (v_found.run_id, v_found.call_id) <> (p_run_id, st_call_id[i]) THEN
                    v_refused := v_refused
                        || jsonb_build_object(st_call_id[i], jsonb_build_array('blocked', v_found.run_id, v_found.call_id));
                    CONTINUE;
                END IF;
            END IF;
            IF v_key <> st_idempotency_key[i] THEN
                v_keys := v_keys || jsonb_build_object(st_call_id[i], v_key);
            END IF;
        END IF;
        INSERT INTO effects (run_id, call_id, lineage_id, step, tool, reversibility, compensator,
                             idempotency_key, idempotent, status, approval_id, compensates,
                             started_at, args, sensitive, args_digest, asked_digest)
        VALUES (p_run_id, st_call_id[i], st_lineage_id[i], st_step[i], st_tool[i],
                st_reversibility[i], st_compensator[i], v_key, st_idempotent[i], 'started',
                st_approval_id[i], st_compensates[i], st_started_at[i], st_args[i],
                st_sensitive[i], st_args_digest[i], st_asked_digest[i]);
    END LOOP;

    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    SELECT a.at, a.actor, a.action, a.run_id, a.approval_id, a.detail
    FROM unnest(ev_at, ev_actor, ev_action, ev_run_id, ev_approval_id, ev_detail)
         WITH ORDINALITY AS a(at, actor, action, run_id, approval_id, detail, n)
    ORDER BY a.n;
    RETURN jsonb_build_object('refused', v_refused, 'keys', v_keys);
END;
$$;
