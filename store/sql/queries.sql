-- The Signoff store's queries, once for SQLite and PostgreSQL. Parameters are named
-- (`:name`; the PostgreSQL backend numbers them); times are epoch seconds on the way in and
-- out (a codec on PostgreSQL's connections), JSON is text. A query the dialects write
-- differently appears twice, tagged `[sqlite]` and `[postgres]`; smaller differences are the
-- `{placeholders}` that `store/queries.py` lists. Statements that lock rows are empty for
-- SQLite, whose single writer has no need of them.

-- schema_table_exists [sqlite] --
-- Whether the migrations table exists yet.
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'signoff_schema'

-- schema_table_exists [postgres] --
-- Whether the migrations table exists yet (in the schema the search path names first).
SELECT to_regclass('signoff_schema') IS NOT NULL

-- record_migration --
-- Record one applied migration.
INSERT INTO signoff_schema (version, name, applied_at) VALUES (:version, :name, :applied_at)

-- other_tables [sqlite] --
-- How many tables the file has that are not Signoff's bookkeeping or SQLite's own.
SELECT count(*) FROM sqlite_master
WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'signoff_schema'

-- other_tables [postgres] --
-- How many tables the schema has that are not Signoff's bookkeeping.
SELECT count(*) FROM pg_tables
WHERE schemaname = current_schema() AND tablename <> 'signoff_schema'

-- current_schema [sqlite] --
-- The schema Signoff's tables go in (a file has one).
SELECT 'main'

-- current_schema [postgres] --
-- The schema Signoff's tables go in: the first of the search path that exists, or NULL.
SELECT current_schema()

-- schema_version --
-- The newest applied migration, or 0 on an empty database.
SELECT coalesce(max(version), 0) FROM signoff_schema

-- create_schema_table [sqlite] --
-- The table that records applied migrations.
CREATE TABLE IF NOT EXISTS signoff_schema (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at REAL NOT NULL
)

-- create_schema_table [postgres] --
-- The table that records applied migrations.
CREATE TABLE IF NOT EXISTS signoff_schema (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL
)

-- lock_migrations [sqlite] --
-- (None: migrations run in a BEGIN IMMEDIATE transaction, which one process holds at a time.)

-- lock_migrations [postgres] --
-- One migrating process at a time (the lock ends with the transaction).
SELECT pg_advisory_xact_lock(hashtextextended('signoff:migrate:' || current_schema(), 0))

-- hold_leases_still [sqlite] --
-- (None: migrations run in a BEGIN IMMEDIATE transaction, in which no other process writes.)

-- hold_leases_still [postgres] --
-- While migrations are applied, no lease is taken or given (reads go on): the lease holders
-- the migration was checked against are the ones that hold leases when it commits, and a
-- claim waiting for this lock sees the new schema once it may go on.
LOCK TABLE runs IN SHARE MODE

-- lease_schema_kept [sqlite] --
-- Whether the runs table says which schema each lease holder runs (migration 0028).
SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'lease_schema'

-- lease_schema_kept [postgres] --
-- Whether the runs table says which schema each lease holder runs (migration 0028).
SELECT count(*) FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = 'runs' AND column_name = 'lease_schema'

-- lease_holders --
-- The workers holding live leases, with the schema each said it runs when it took them: NULL
-- for a lease taken since by a Signoff from before workers said so (its epoch moved on).
SELECT lease_owner,
       CASE WHEN lease_schema_epoch = lease_epoch THEN lease_schema END AS lease_schema,
       count(*) AS runs
FROM runs WHERE lease_owner IS NOT NULL AND lease_expires_at > {now}
GROUP BY 1, 2 ORDER BY 1, 2

-- lease_holders_unsaid --
-- The workers holding live leases on a database from before workers said their schema.
SELECT lease_owner, NULL AS lease_schema, count(*) AS runs
FROM runs WHERE lease_owner IS NOT NULL AND lease_expires_at > {now}
GROUP BY 1 ORDER BY 1

-- take_leases --
-- Stop the world for a migration: take the live leases `:owner` holds. Its next write for
-- each run is refused (fencing), and each run that should move waits in the queue. How many.
UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL,
    ready_at = CASE WHEN {drivable} THEN coalesce(ready_at, {now}) ELSE ready_at END
WHERE lease_owner = :owner AND lease_expires_at > {now}

-- notify_schema_changed [sqlite] --
-- (None: the workers on one machine see the new schema at their next claim.)

-- notify_schema_changed [postgres] --
-- Tell every worker on the schema's channel (at commit) that the schema moved: one that runs
-- an older Signoff steps aside at once, not at its next claim.
SELECT pg_notify(left('signoff:' || current_schema(), 63), 'schema_changed')

-- insert_run --
-- Create a run; a running one is ready for a worker to claim (the run queue) at once.
INSERT INTO runs (id, agent, task, status, budget, requested_by, lineage_id, parent_id,
                  fork_step, dry_run, created_at, updated_at, model, ready_at)
VALUES (:id, :agent, :task, :status, :budget, :requested_by, :lineage_id, :parent_id,
        :fork_step, :dry_run, :created_at, :updated_at, :model,
        CASE WHEN :status = 'running' THEN :created_at::timestamptz END)

-- create_run [sqlite] --
-- (None: SQLite runs the statements one by one, `store.core.create_run`; in one process there
-- is no round trip to save.)

-- create_run [postgres] --
-- A run created in one statement, so one round trip: what `insert_run`, `insert_checkpoint`
-- and `insert_event` write (the first checkpoint's columns as `:cp_*`, the events' as
-- arrays), then, for a running run, the notification that wakes the idle workers (delivered
-- at commit). The checkpoint's and the events' rows refer to the run's: each insert waits on
-- the one before it. A taken id fails the whole statement, writing nothing.
WITH run AS (
    INSERT INTO runs (id, agent, task, status, budget, requested_by, lineage_id, parent_id,
                      fork_step, dry_run, created_at, updated_at, model, ready_at)
    VALUES (:id, :agent, :task, :status, :budget, :requested_by, :lineage_id, :parent_id,
            :fork_step, :dry_run, :created_at, :updated_at, :model,
            CASE WHEN :status = 'running' THEN :created_at::timestamptz END)
    RETURNING id, status
),
checkpoint AS (
    INSERT INTO checkpoints (run_id, seq, step, snapshot, status, steps, input_tokens,
                             output_tokens, cost, stop_reason, error, created_at, messages,
                             cached_input_tokens)
    SELECT run.id, :cp_seq, :cp_step, :cp_snapshot, :cp_status, :cp_steps, :cp_input_tokens,
           :cp_output_tokens, :cp_cost, :cp_stop_reason, :cp_error, :cp_created_at,
           :cp_messages, :cp_cached_input_tokens
    FROM run
    RETURNING run_id
),
audited AS (
    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    SELECT a.at, a.actor, a.action, a.run_id, a.approval_id, a.detail
    FROM checkpoint, unnest(:ev_at::timestamptz[], :ev_actor::text[], :ev_action::text[],
                            :ev_run_id::text[], :ev_approval_id::text[], :ev_detail::jsonb[])
         WITH ORDINALITY AS a(at, actor, action, run_id, approval_id, detail, n)
    ORDER BY a.n
)
SELECT run.id,
       (SELECT count(pg_notify(left('signoff:' || current_schema(), 63), 'run_ready'))
        FROM checkpoint WHERE run.status = 'running')
FROM run

-- notify_run_ready [sqlite] --
-- (None: one machine has no other processes to wake; the queue's poll finds the run.)

-- notify_run_ready [postgres] --
-- Wake the idle workers listening on the schema's channel (delivered at commit): a run is
-- ready for whichever has room.
SELECT pg_notify(left('signoff:' || current_schema(), 63), 'run_ready')

-- get_run --
-- A run with the step and usage of its latest checkpoint.
SELECT r.id, r.agent, r.task, r.status, r.budget, r.requested_by, r.lineage_id, r.parent_id,
       r.fork_step, r.dry_run, r.lease_owner, r.lease_expires_at, r.created_at, r.updated_at,
       r.model,
       c.step, c.steps, c.input_tokens, c.cached_input_tokens, c.output_tokens, c.cost, c.stop_reason, c.error
FROM runs r
JOIN checkpoints c ON c.run_id = r.id
 AND c.seq = (SELECT max(seq) FROM checkpoints WHERE run_id = r.id)
WHERE r.id = :id

-- list_runs --
-- Runs, newest first; each joined to its latest checkpoint.
SELECT r.id, r.agent, r.task, r.status, r.budget, r.requested_by, r.lineage_id, r.parent_id,
       r.fork_step, r.dry_run, r.lease_owner, r.lease_expires_at, r.created_at, r.updated_at,
       r.model,
       c.step, c.steps, c.input_tokens, c.cached_input_tokens, c.output_tokens, c.cost, c.stop_reason, c.error
FROM (SELECT * FROM runs ORDER BY created_at DESC, id LIMIT :limit) r
JOIN checkpoints c ON c.run_id = r.id
 AND c.seq = (SELECT max(seq) FROM checkpoints WHERE run_id = r.id)
ORDER BY r.created_at DESC, r.id

-- list_runs_by_status --
-- Runs of one status, newest first; each joined to its latest checkpoint.
SELECT r.id, r.agent, r.task, r.status, r.budget, r.requested_by, r.lineage_id, r.parent_id,
       r.fork_step, r.dry_run, r.lease_owner, r.lease_expires_at, r.created_at, r.updated_at,
       r.model,
       c.step, c.steps, c.input_tokens, c.cached_input_tokens, c.output_tokens, c.cost, c.stop_reason, c.error
FROM (SELECT * FROM runs WHERE status = :status
      ORDER BY created_at DESC, id LIMIT :limit) r
JOIN checkpoints c ON c.run_id = r.id
 AND c.seq = (SELECT max(seq) FROM checkpoints WHERE run_id = r.id)
ORDER BY r.created_at DESC, r.id

-- page_runs --
-- One page of runs, newest first, filtered by status, agent and requester (each optional),
-- after the cursor (created_at, id) of the previous page's last one; with latest checkpoints.
SELECT r.id, r.agent, r.task, r.status, r.budget, r.requested_by, r.lineage_id, r.parent_id,
       r.fork_step, r.dry_run, r.lease_owner, r.lease_expires_at, r.created_at, r.updated_at,
       r.model,
       c.step, c.steps, c.input_tokens, c.cached_input_tokens, c.output_tokens, c.cost, c.stop_reason, c.error
FROM (SELECT * FROM runs
      WHERE (:status::text IS NULL OR status = :status)
        AND (:agent::text IS NULL OR agent = :agent)
        AND (:requested_by::text IS NULL OR requested_by = :requested_by)
        AND (:after_at::timestamptz IS NULL OR created_at < :after_at
             OR (created_at = :after_at AND id > :after_id::text))
      ORDER BY created_at DESC, id LIMIT :limit) r
JOIN checkpoints c ON c.run_id = r.id
 AND c.seq = (SELECT max(seq) FROM checkpoints WHERE run_id = r.id)
ORDER BY r.created_at DESC, r.id

-- run_head --
-- What a write checks first: who holds the lease, the mirrored status, the latest seq. The
-- run's row stays locked to the end of the transaction: writers of one run take turns.
SELECT lease_owner, status, (SELECT max(seq) FROM checkpoints WHERE run_id = :id),
       lease_epoch
FROM runs WHERE id = :id
{for_update}

-- commit_step [sqlite] --
-- (None: SQLite runs the whole body, `store.core.commit`; in one process there is no round
-- trip to save.)

-- commit_step [postgres] --
-- A step's plain write (`store.core.step_statement`) as one statement, so one round trip:
-- the checks `check_head` and `finish_effect` make (the lease's holder and epoch on the run's
-- locked row, the first checkpoint one past the latest seq, each finished effect in flight),
-- then the checkpoints, the run's mirrored status (and the outbox row announcing its end, as
-- `announce.run_status_changed` writes it, with its notification), the effects' outcomes
-- (and what a completed compensation undid; a read's result kept as the seq of the
-- checkpoint holding it, as `finish_effect` does), the reads' starts and the audit events.
-- Every write waits on the checks, and the last line divides by zero when one failed: the
-- error aborts the statement with everything it wrote, and the store runs the whole body
-- instead, which says why. A latest seq read before the row lock was granted can be stale; inserting at it
-- collides with the checkpoint that is there, which aborts the same way.
WITH head AS MATERIALIZED (
    SELECT (:owner::text IS NULL OR lease_owner = :owner)
           AND (:owner::text IS NULL OR :epoch::bigint IS NULL OR lease_epoch = :epoch)
           AND (SELECT max(seq) FROM checkpoints WHERE run_id = :run_id) = :first_seq - 1
           AS ok
    FROM runs WHERE id = :run_id
    FOR UPDATE
),
checked AS MATERIALIZED (
    SELECT coalesce((SELECT ok FROM head), false) AS ok
),
appended AS (
    INSERT INTO checkpoints (run_id, seq, step, snapshot, status, steps, input_tokens,
                             output_tokens, cost, stop_reason, error, created_at, messages,
                             cached_input_tokens)
    SELECT :run_id, c.* FROM unnest(
        :cp_seq::int[], :cp_step::int[], :cp_snapshot::bool[], :cp_status::text[],
        :cp_steps::int[], :cp_input_tokens::bigint[], :cp_output_tokens::bigint[],
        :cp_cost::float8[], :cp_stop_reason::text[], :cp_error::text[],
        :cp_created_at::timestamptz[], :cp_messages::jsonb[],
        :cp_cached_input_tokens::bigint[]) AS c
    WHERE (SELECT ok FROM checked)
),
mirrored AS (
    UPDATE runs SET status = :status, updated_at = :updated_at
    WHERE id = :run_id AND status <> :status AND (SELECT ok FROM checked)
    RETURNING status
),
announced AS (
    INSERT INTO outbox (topic, subject_id, detail, created_at, next_attempt_at)
    SELECT 'run_finished', :run_id, jsonb_build_object('status', status), clock_timestamp(),
           clock_timestamp()
    FROM mirrored WHERE status IN ('done', 'failed', 'cancelled')
    RETURNING topic
),
finished AS (
    UPDATE effects e
    SET status = f.status, error = f.error, finished_at = f.finished_at,
        result = CASE WHEN e.reversibility = 'read' AND f.result_seq IS NOT NULL THEN NULL
                      ELSE f.result END,
        result_seq = CASE WHEN e.reversibility = 'read' THEN f.result_seq END
    FROM unnest(:fin_call_id::text[], :fin_status::text[], :fin_result::jsonb[],
                :fin_error::text[], :fin_finished_at::timestamptz[], :fin_result_seq::int[])
         AS f(call_id, status, result, error, finished_at, result_seq)
    WHERE e.run_id = :run_id AND e.call_id = f.call_id AND e.status IN ('started', 'in_doubt')
      AND (SELECT ok FROM checked)
    RETURNING e.call_id, e.status, e.compensates
),
compensated AS (
    UPDATE effects e SET compensated_by = f.call_id
    FROM finished f
    WHERE f.compensates IS NOT NULL AND f.status = 'completed'
      AND e.run_id = :run_id AND e.call_id = f.compensates
),
started AS (
    INSERT INTO effects (run_id, call_id, lineage_id, step, tool, reversibility, compensator,
                         idempotency_key, idempotent, status, approval_id, compensates,
                         started_at, args, sensitive, args_digest, asked_digest)
    SELECT :run_id, s.call_id, s.lineage_id, s.step, s.tool, s.reversibility, s.compensator,
           s.idempotency_key, s.idempotent, 'started', s.approval_id, s.compensates,
           s.started_at, s.args, s.sensitive, s.args_digest, s.asked_digest
    FROM unnest(
        :st_call_id::text[], :st_lineage_id::text[], :st_step::int[], :st_tool::text[],
        :st_reversibility::text[], :st_compensator::text[], :st_idempotency_key::text[],
        :st_idempotent::bool[], :st_approval_id::text[], :st_compensates::text[],
        :st_started_at::timestamptz[], :st_args::jsonb[], :st_sensitive::jsonb[],
        :st_args_digest::bytea[], :st_asked_digest::bytea[]) WITH ORDINALITY
         AS s(call_id, lineage_id, step, tool, reversibility, compensator, idempotency_key,
              idempotent, approval_id, compensates, started_at, args, sensitive, args_digest,
              asked_digest, n)
    WHERE (SELECT ok FROM checked)
    ORDER BY s.n
),
audited AS (
    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    SELECT a.at, a.actor, a.action, a.run_id, a.approval_id, a.detail
    FROM unnest(:ev_at::timestamptz[], :ev_actor::text[], :ev_action::text[],
                :ev_run_id::text[], :ev_approval_id::text[], :ev_detail::jsonb[])
         WITH ORDINALITY AS a(at, actor, action, run_id, approval_id, detail, n)
    WHERE (SELECT ok FROM checked)
    ORDER BY a.n
)
SELECT 1 / ((SELECT ok FROM checked)
            AND (SELECT count(*) FROM finished) = cardinality(:fin_call_id::text[]))::int,
       (SELECT count(pg_notify(left('signoff:' || current_schema(), 63), topic)) FROM announced)

-- start_step [sqlite] --
-- (None: SQLite runs the whole body, `store.core.commit`; in one process there is no round
-- trip to save.)

-- start_step [postgres] --
-- A step that starts mutating effects (`store.core.start_statement`) as one call of the
-- function migration 0019 made, so one round trip: it does what the body does for such a
-- batch, and divides by zero, writing nothing, where the body must say why or decide.
SELECT signoff_start_step(
    :run_id::text, :owner::text, :epoch::bigint, :first_seq::int, :status::text,
    :updated_at::timestamptz,
    :cp_seq::int[], :cp_step::int[], :cp_snapshot::bool[], :cp_status::text[],
    :cp_steps::int[], :cp_input_tokens::bigint[], :cp_output_tokens::bigint[],
    :cp_cost::float8[], :cp_stop_reason::text[], :cp_error::text[],
    :cp_created_at::timestamptz[], :cp_messages::jsonb[], :cp_cached_input_tokens::bigint[],
    :fin_call_id::text[], :fin_status::text[], :fin_result::jsonb[], :fin_error::text[],
    :fin_finished_at::timestamptz[],
    :st_call_id::text[], :st_lineage_id::text[], :st_step::int[], :st_tool::text[],
    :st_reversibility::text[], :st_compensator::text[], :st_idempotency_key::text[],
    :st_idempotent::bool[], :st_approval_id::text[], :st_compensates::text[],
    :st_started_at::timestamptz[], :st_args::jsonb[], :st_sensitive::jsonb[],
    :st_args_digest::bytea[], :st_asked_digest::bytea[],
    :ev_at::timestamptz[], :ev_actor::text[], :ev_action::text[], :ev_run_id::text[],
    :ev_approval_id::text[], :ev_detail::jsonb[],
    :lineages::text[], :keys::text[])

-- set_run_status --
-- Mirror the latest checkpoint's status onto the run row, for listing by status.
UPDATE runs SET status = :status, updated_at = :updated_at WHERE id = :id

-- set_run_model --
-- Record the model a run goes on with (a person chose to resume it on another, audited).
UPDATE runs SET model = :model, updated_at = :updated_at WHERE id = :id

-- set_run_budget --
-- Change a run's limits (usage is untouched: a resumed run never gets a fresh allowance).
UPDATE runs SET budget = :budget, updated_at = :updated_at WHERE id = :id

-- prune_runs --
-- Delete whole lineages (a run and its forks share one ledger) that are all finished and
-- were last touched before a time; their history cascades. A lineage a human still owes
-- something (an open page, an effect running or in doubt) is kept whatever its age.
DELETE FROM runs
WHERE lineage_id IN (
    SELECT lineage_id FROM runs
    GROUP BY lineage_id
    HAVING max(updated_at) < :before
       AND count(CASE WHEN status NOT IN ('done', 'failed', 'cancelled') THEN 1 END) = 0
)
  AND lineage_id NOT IN (
    SELECT r.lineage_id FROM pages p JOIN runs r ON r.id = p.run_id
    WHERE p.acknowledged_by IS NULL
)
  AND lineage_id NOT IN (
    SELECT r.lineage_id FROM effects e JOIN runs r ON r.id = e.run_id
    WHERE e.status IN ('started', 'in_doubt')
)

-- insert_checkpoint --
-- Append one checkpoint.
INSERT INTO checkpoints (run_id, seq, step, snapshot, status, steps, input_tokens,
                         output_tokens, cost, stop_reason, error, created_at, messages,
                         cached_input_tokens)
VALUES (:run_id, :seq, :step, :snapshot, :status, :steps, :input_tokens, :output_tokens,
        :cost, :stop_reason, :error, :created_at, :messages, :cached_input_tokens)

-- seq_at_step --
-- The last checkpoint seq of a step: the state the run had when that step was over; none if
-- a later rollback went back before the step (its restore is a snapshot at a lower step).
SELECT c.seq FROM checkpoints c
WHERE c.run_id = :run_id
  AND c.seq = (SELECT max(seq) FROM checkpoints WHERE run_id = :run_id AND step = :step)
  AND NOT EXISTS (SELECT 1 FROM checkpoints r {indexed_by(checkpoints_snapshots)}
                  WHERE r.run_id = :run_id AND r.snapshot = {true} AND r.seq > c.seq
                    AND r.step < c.step)

-- load_state --
-- A state in one query, in seq order: the messages of the last snapshot up to the target seq
-- and of every checkpoint after it; the target row also carries its own fields (as JSON).
SELECT seq, messages,
       CASE WHEN seq = coalesce(:seq, (SELECT max(seq) FROM checkpoints WHERE run_id = :run_id))
       THEN {json_object}('step', step, 'status', status, 'steps', steps,
                          'input_tokens', input_tokens, 'output_tokens', output_tokens,
                          'cached_input_tokens', cached_input_tokens,
                          'cost', cost, 'stop_reason', stop_reason, 'error', error)
       END AS state
FROM checkpoints
WHERE run_id = :run_id
  AND seq <= coalesce(:seq, (SELECT max(seq) FROM checkpoints WHERE run_id = :run_id))
  AND seq >= (SELECT max(seq) FROM checkpoints
              WHERE run_id = :run_id AND snapshot = {true}
                AND seq <= coalesce(:seq, (SELECT max(seq) FROM checkpoints
                                           WHERE run_id = :run_id)))
ORDER BY seq

-- history --
-- Every checkpoint of a run, oldest first; `rolled_back` when a later checkpoint has a lower
-- step (steps go down only where a rollback restored an earlier one).
SELECT run_id, seq, step, snapshot, status, steps, input_tokens, cached_input_tokens,
       output_tokens, cost,
       stop_reason, error, created_at, messages,
       coalesce(step > min(step) OVER later, {false}) AS rolled_back
FROM checkpoints WHERE run_id = :run_id
WINDOW later AS (ORDER BY seq ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)
ORDER BY seq

-- insert_effect --
-- Record an effect as started, before its tool runs.
INSERT INTO effects (run_id, call_id, lineage_id, step, tool, reversibility, compensator,
                     idempotency_key, idempotent, status, approval_id, compensates,
                     started_at, args, sensitive, args_digest, asked_digest)
VALUES (:run_id, :call_id, :lineage_id, :step, :tool, :reversibility, :compensator,
        :idempotency_key, :idempotent, 'started', :approval_id, :compensates, :started_at,
        :args, :sensitive, :args_digest, :asked_digest)

-- finish_effect [sqlite] --
-- Record how a started (or in-doubt, being retried) effect ended; says what it compensates.
-- A read whose result the batch's checkpoint holds (`:result_seq`) keeps that seq, not a
-- copy (`store.read_results`).
UPDATE effects SET status = :status, error = :error, finished_at = :finished_at,
                   result = CASE WHEN reversibility = 'read' AND :result_seq IS NOT NULL
                                 THEN NULL ELSE :result END,
                   result_seq = CASE WHEN reversibility = 'read' THEN :result_seq END
WHERE run_id = :run_id AND call_id = :call_id AND status IN ('started', 'in_doubt')
RETURNING compensates

-- finish_effect [postgres] --
-- As SQLite's.
UPDATE effects SET status = :status, error = :error, finished_at = :finished_at,
                   result = CASE WHEN reversibility = 'read' AND :result_seq::int IS NOT NULL
                                 THEN NULL ELSE :result::jsonb END,
                   result_seq = CASE WHEN reversibility = 'read' THEN :result_seq::int END
WHERE run_id = :run_id AND call_id = :call_id AND status IN ('started', 'in_doubt')
RETURNING compensates

-- mark_compensated --
-- When a compensating effect completes, point the effect it undid at it.
UPDATE effects SET compensated_by = :call_id WHERE run_id = :run_id AND call_id = :compensates

-- completed_effect_by_key --
-- The completed mutating effect with this idempotency key in a lineage, if any; one not
-- undone first.
SELECT * FROM effects
WHERE lineage_id = :lineage_id AND idempotency_key = :idempotency_key
  AND reversibility <> 'read' AND status = 'completed'
ORDER BY compensated_by IS NOT NULL, id LIMIT 1

-- unsettled_effect_by_key --
-- A mutating effect with this key in the lineage that is running or in doubt, if any.
SELECT * FROM effects
WHERE lineage_id = :lineage_id AND idempotency_key = :idempotency_key
  AND reversibility <> 'read' AND status IN ('started', 'in_doubt')
ORDER BY id LIMIT 1

-- conflicting_effect_by_key --
-- The latest mutating effect in any lineage under this idempotency key with other arguments
-- (another digest) that may have happened: completed and not undone, running or in doubt.
SELECT * FROM effects {indexed_by(effects_by_key_alone)}
WHERE idempotency_key = :idempotency_key AND reversibility <> 'read'
  AND args_digest IS NOT NULL AND args_digest <> :args_digest
  AND (status IN ('started', 'in_doubt') OR (status = 'completed' AND compensated_by IS NULL))
ORDER BY id DESC LIMIT 1

-- shared_effect_by_key --
-- The first mutating effect in another lineage under this idempotency key with the same
-- arguments that may have happened (completed and not undone, running or in doubt): an
-- effect started with this key relies on it (the outside system dedupes by the key).
SELECT * FROM effects {indexed_by(effects_by_key_alone)}
WHERE idempotency_key = :idempotency_key AND reversibility <> 'read'
  AND lineage_id <> :lineage_id AND args_digest = :args_digest
  AND (status IN ('started', 'in_doubt') OR (status = 'completed' AND compensated_by IS NULL))
ORDER BY id LIMIT 1

-- insert_effect_reuse --
-- A run relies on another run's effect (one row per call of the run relying on it).
INSERT INTO effect_reuses (run_id, call_id, from_run_id, from_call_id, tool, idempotency_key,
                           at)
VALUES (:run_id, :call_id, :from_run_id, :from_call_id, :tool, :idempotency_key, :at)
ON CONFLICT (run_id, call_id) DO NOTHING

-- effect_group --
-- The reuses of an effect and, when it is itself a reuse, of the effect it reuses: every run
-- that shares what it did, oldest first.
SELECT * FROM effect_reuses
WHERE (from_run_id = :run_id AND from_call_id = :call_id)
   OR (from_run_id, from_call_id) IN (
       SELECT from_run_id, from_call_id FROM effect_reuses
       WHERE run_id = :run_id AND call_id = :call_id)
ORDER BY at, run_id, call_id

-- mark_reuse_undone --
-- The effect a run relies on was compensated all the same: said once.
UPDATE effect_reuses SET undone_at = :at
WHERE run_id = :run_id AND call_id = :call_id AND undone_at IS NULL

-- get_effect --
-- One effect.
SELECT * FROM effects WHERE run_id = :run_id AND call_id = :call_id

-- list_effects --
-- A run's effects in the order they started.
SELECT * FROM effects WHERE run_id = :run_id ORDER BY id

-- checkpoint_messages [sqlite] --
-- The messages of a run's checkpoints of these seqs (a JSON array), where its read effects'
-- results are (`store.read_results`).
SELECT seq, messages FROM checkpoints
WHERE run_id = :run_id AND seq IN (SELECT value FROM json_each(:seqs))

-- checkpoint_messages [postgres] --
-- As SQLite's.
SELECT seq, messages FROM checkpoints
WHERE run_id = :run_id
  AND seq = ANY (ARRAY(SELECT jsonb_array_elements_text(:seqs::jsonb)::int))

-- insert_approval --
-- Create an approval. Its deadline and first reminder are the database's time plus how far
-- after `created_at` the worker set them: the worker's clock gives only the lengths.
INSERT INTO approvals (id, run_id, call_id, lineage_id, idempotency_key, tool, args,
                       approved_args, policy, state, decided_by, decided_at, reason,
                       requested_by, required_approvals, deadline, next_reminder_at,
                       reminders_sent, escalated, channel, message_ts, delivery, callback_url,
                       callback_status, duplicate_of, rule, authority, created_at,
                       sensitive, args_digest, approved_digest, key_suffix, conflict,
                       duplicate_args, resume_state, requester_token, context,
                       context_error, context_digest, agent_reason, reasked, question)
VALUES (:id, :run_id, :call_id, :lineage_id, :idempotency_key, :tool, :args, :approved_args,
        :policy, :state, :decided_by, :decided_at, :reason, :requested_by,
        :required_approvals,
        {shifted(:deadline, :created_at)},
        {shifted(:next_reminder_at, :created_at)},
        :reminders_sent, :escalated,
        :channel, :message_ts, :delivery, :callback_url, :callback_status, :duplicate_of,
        :rule, :authority, :created_at, :sensitive, :args_digest, :approved_digest,
        :key_suffix, :conflict, :duplicate_args, :resume_state, :requester_token, :context,
        :context_error, :context_digest, :agent_reason, :reasked, :question)

-- approvals_without_authority --
-- Pending approvals asked before approvals carried their authority, oldest first.
SELECT * FROM approvals {indexed_by(approvals_pending_without_authority)}
WHERE state = 'pending' AND authority IS NULL
ORDER BY created_at LIMIT :limit

-- fill_authority --
-- Record an approval's authority once: a second filler (another process) changes nothing.
UPDATE approvals SET authority = :authority WHERE id = :id AND authority IS NULL

-- record_worker --
-- A worker says which configuration it runs: at start (a new `started_at`) and since.
INSERT INTO workers (id, config_digest, started_at, seen_at)
VALUES (:id, :config_digest, :started_at, {now})
ON CONFLICT (id) DO UPDATE
SET config_digest = excluded.config_digest, started_at = excluded.started_at, seen_at = {now}

-- insert_passkey --
-- A passkey a person registered; a credential id already known is not taken again.
INSERT INTO passkeys (id, person, public_key, sign_count, created_at)
VALUES (:id, :person, :public_key, :sign_count, :created_at)
ON CONFLICT (id) DO NOTHING

-- list_passkeys --
-- A person's passkeys, oldest first.
SELECT * FROM passkeys WHERE person = :person ORDER BY created_at, id

-- use_passkey --
-- Compare-and-set a passkey's signature counter forward: a signature whose counter did not
-- grow (a replay, a cloned key) changes nothing. A counter of 0 is an authenticator's that
-- keeps none: it always passes.
UPDATE passkeys SET sign_count = :sign_count
WHERE id = :id AND person = :person AND (sign_count < :sign_count OR :sign_count = 0)

-- keep_challenge --
-- A WebAuthn challenge the page issued, for one person and one purpose, for :ttl seconds.
INSERT INTO passkey_challenges (challenge, person, purpose, expires_at)
VALUES (:challenge, :person, :purpose, {seconds_from_clock(:ttl)})

-- take_challenge --
-- Use a challenge, once: whichever answer deletes it first gets its person and purpose; an
-- expired one, or one used already, gives nothing.
DELETE FROM passkey_challenges WHERE challenge = :challenge AND expires_at > {clock}
RETURNING person, purpose

-- forget_challenges --
-- Drop challenges nobody answered in time, at most :limit of them.
DELETE FROM passkey_challenges
WHERE challenge IN (SELECT challenge FROM passkey_challenges WHERE expires_at < {clock} LIMIT :limit)

-- list_workers --
-- The workers seen since :ago seconds from now (negative: in the past; by the database's
-- clock), the most recently seen first.
SELECT * FROM workers WHERE seen_at >= {seconds_from_now(:ago)} ORDER BY seen_at DESC, id

-- duplicate_approval_by_key --
-- The latest approval in another lineage with this idempotency key that is pending, or was
-- approved since :since (not declined, not withdrawn): what a new request may duplicate.
SELECT * FROM approvals {indexed_by(approvals_by_idempotency_key)}
WHERE idempotency_key = :idempotency_key AND lineage_id {is_distinct_from} :lineage_id
  AND (state = 'pending' OR (state = 'approved' AND decided_at >= :since))
ORDER BY created_at DESC LIMIT 1

-- declined_approval_by_key --
-- A decline of this call (this idempotency key and arguments) in a lineage, if any: a
-- person's, or an expiry; not a withdrawal by Signoff when its run was cancelled or rolled
-- back, nor an approver's question (the agent answers it by asking again). Without statistics SQLite would pick the index on state, and read every decline.
SELECT * FROM approvals {indexed_by(approvals_by_key)}
WHERE lineage_id = :lineage_id AND idempotency_key = :idempotency_key AND state = 'declined'
  AND (args_digest IS NULL OR args_digest = :args_digest)
  AND NOT (decided_by = 'signoff' AND reason LIKE 'withdrawn:%') AND question IS NULL
ORDER BY created_at LIMIT 1

-- get_approval --
-- One approval.
SELECT * FROM approvals WHERE id = :id

-- list_approvals --
-- Every approval, oldest first.
SELECT * FROM approvals ORDER BY created_at, id LIMIT :limit

-- list_approvals_by_state --
-- Approvals in one state, oldest first.
SELECT * FROM approvals WHERE state = :state ORDER BY created_at, id LIMIT :limit

-- list_approvals_of_run --
-- A run's approvals, oldest first, optionally in one state.
SELECT * FROM approvals {indexed_by(approvals_by_run)}
WHERE run_id = :run_id AND (:state::text IS NULL OR state = :state)
ORDER BY created_at, id LIMIT :limit

-- approvals_of_person --
-- The approvals one person asked for or decided, created at or after :since, newest first, at
-- most :limit: what their App Home lists. Each side is a range of its own index (requester,
-- decider), so the read stays small however many approvals other people have.
SELECT * FROM approvals
WHERE id IN (
    SELECT id FROM approvals {indexed_by(approvals_by_requester)}
    WHERE requested_by = :user AND created_at >= :since::timestamptz
    UNION
    SELECT id FROM approvals {indexed_by(approvals_by_decider)}
    WHERE decided_by = :user AND created_at >= :since::timestamptz
)
ORDER BY created_at DESC, id DESC LIMIT :limit

-- decider_groups --
-- The user groups among the deciders of pending approvals (by the deciders' index): a
-- person's Home asks the directory which of them they belong to.
SELECT DISTINCT decider FROM approval_deciders WHERE decider >= 'S' AND decider < 'T'
ORDER BY decider

-- pending_for_deciders [sqlite] --
-- One page of the pending approvals :user may decide, longest-waiting first: those whose
-- deciders name :user, a group of theirs or anyone (the JSON list :deciders; an escalation's
-- approver is one once it escalated), the requester only where self-approval is allowed;
-- after the cursor (created_at, id) of the previous page's last one. Each row carries how
-- many there are from the cursor on (`waiting`), counted on the deciders' index alone; only
-- the page's rows of `approvals` are read.
WITH mine AS (
    SELECT DISTINCT d.created_at, d.approval_id FROM approval_deciders d
    WHERE d.decider IN (SELECT value FROM json_each(:deciders))
      AND (:after_at IS NULL OR d.created_at > :after_at
           OR (d.created_at = :after_at AND d.approval_id > :after_id))
      AND (d.self_ok OR d.requested_by IS NULL OR d.requested_by <> :user)
)
SELECT a.*, (SELECT count(*) FROM mine) AS waiting FROM approvals a
WHERE a.id IN (SELECT approval_id FROM mine ORDER BY created_at, approval_id LIMIT :limit)
ORDER BY a.created_at, a.id

-- pending_for_deciders [postgres] --
-- The same, over PostgreSQL's JSON.
WITH mine AS (
    SELECT DISTINCT d.created_at, d.approval_id FROM approval_deciders d
    WHERE d.decider = ANY (ARRAY(SELECT jsonb_array_elements_text(:deciders::jsonb)))
      AND (:after_at::timestamptz IS NULL OR d.created_at > :after_at
           OR (d.created_at = :after_at AND d.approval_id > :after_id::text))
      AND (d.self_ok OR d.requested_by IS NULL OR d.requested_by <> :user)
)
SELECT a.*, (SELECT count(*) FROM mine) AS waiting FROM approvals a
WHERE a.id IN (SELECT approval_id FROM mine ORDER BY created_at, approval_id LIMIT :limit)
ORDER BY a.created_at, a.id

-- page_approvals --
-- One page of approvals, oldest first, filtered by state, run, tool and requester (each
-- optional), after the cursor (created_at, id) of the previous page's last one.
SELECT * FROM approvals
WHERE (:state::text IS NULL OR state = :state)
  AND (:run_id::text IS NULL OR run_id = :run_id)
  AND (:tool::text IS NULL OR tool = :tool)
  AND (:requested_by::text IS NULL OR requested_by = :requested_by)
  AND (:after_at::timestamptz IS NULL OR created_at > :after_at
       OR (created_at = :after_at AND id > :after_id::text))
ORDER BY created_at, id LIMIT :limit

-- decide_at_once [sqlite] --
-- (None: SQLite runs `cast_vote`'s body; in one process there is no round trip to save.)

-- decide_at_once [postgres] --
-- A person's decision that needs nothing but its row, in one statement sent without BEGIN
-- and COMMIT (one round trip, where `cast_vote`'s transaction takes eight): an approval or a
-- decline that decides at once (no quorum to vote toward, no spend held by its rule), with
-- what `decide_approval` writes beside it: the outbox row (notified at commit), the run made
-- ready when none of its other approvals is pending and none waits out a cool-off, and the
-- audit event. The compare-and-set is `decide_approval`'s. No row when it decided nothing
-- (not pending, past the deadline it keeps to, a quorum, spend): the store then runs the
-- body, which says why or does the rest. Decisions that arrive while one is written go
-- together, a statement each in one transaction (`store.postgres.together`).
WITH decided AS (
    UPDATE approvals
    SET state = :state, decided_by = :decided_by, decided_at = :decided_at, reason = :reason,
        approved_args = :approved_args, approved_digest = :approved_digest,
        key_suffix = :key_suffix, question = :question, decided_for = :decided_for
    WHERE id = :id AND state = 'pending'
      AND (NOT :open_only OR deadline IS NULL OR deadline > {clock})
      AND (:state::text <> 'approved' OR required_approvals <= 1)
      AND (rule IS NULL OR (coalesce(jsonb_array_length(rule -> 'limits'), 0) = 0
                            AND rule ->> 'envelope_id' IS NULL))
    RETURNING *
),
queued AS (
    INSERT INTO outbox (topic, subject_id, detail, created_at, next_attempt_at)
    SELECT 'approval_decided', id, '{}'::jsonb, clock_timestamp(), clock_timestamp()
    FROM decided
    RETURNING topic
),
ready AS (
    UPDATE runs SET ready_at = now()
    FROM decided
    WHERE runs.id = decided.run_id AND runs.status = 'waiting_approval'
      AND runs.ready_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM approvals a
                      WHERE a.run_id = runs.id
                        AND ((a.state = 'pending' AND a.id <> decided.id)
                             OR (a.cool_off = 'waiting' AND a.cool_off_until > now())))
),
audited AS (
    INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
    SELECT :ev_at::timestamptz, :ev_actor::text, :ev_action::text, :ev_run_id::text,
           :ev_approval_id::text, :ev_detail::jsonb
    FROM decided
)
SELECT decided.*,
       (SELECT count(pg_notify(left('signoff:' || current_schema(), 63), topic)) FROM queued)
FROM decided

-- decide_approval --
-- Compare-and-set: decide an approval that is still pending (a timeout only once its deadline
-- passed, a person only while it has not, when the policy declines at the deadline), each
-- judged by the database's clock.
UPDATE approvals
SET state = :state, decided_by = :decided_by, decided_at = :decided_at, reason = :reason,
    approved_args = :approved_args, approved_digest = :approved_digest,
    key_suffix = :key_suffix, question = :question, decided_for = :decided_for
WHERE id = :id AND state = 'pending'
  AND (NOT :due_only OR deadline <= {clock})
  AND (NOT :open_only OR deadline IS NULL OR deadline > {clock})

-- insert_vote --
-- One approver's vote; a second vote by the same user is ignored.
INSERT INTO approval_votes (approval_id, user_id, at) VALUES (:approval_id, :user_id, :at)
ON CONFLICT DO NOTHING

-- set_approval_receipt --
-- Store a decided approval's signed receipt, once (compare-and-set: the first one stays).
UPDATE approvals SET receipt = :receipt
WHERE id = :id AND receipt IS NULL AND state <> 'pending'

-- list_votes --
-- Who voted for an approval, in the order they did.
SELECT user_id FROM approval_votes WHERE approval_id = :approval_id ORDER BY at, user_id

-- count_votes --
-- How many distinct approvers voted for an approval.
SELECT count(*) FROM approval_votes WHERE approval_id = :approval_id

-- due_approvals [sqlite] --
-- Pending approvals whose deadline, next reminder or waiter's heartbeat has come by the
-- database's clock (each through its own index).
SELECT * FROM approvals INDEXED BY approvals_pending_deadline
WHERE state = 'pending' AND deadline <= {clock}
UNION
SELECT * FROM approvals INDEXED BY approvals_pending_reminder
WHERE state = 'pending' AND next_reminder_at <= {clock}
UNION
SELECT * FROM approvals INDEXED BY approvals_pending_waiter
WHERE state = 'pending' AND waiter_until <= {clock}
ORDER BY created_at
LIMIT :limit

-- due_approvals [postgres] --
-- Pending approvals whose deadline, next reminder or waiter's heartbeat has come by the
-- database's clock.
SELECT * FROM approvals
WHERE state = 'pending'
  AND (deadline <= {clock} OR next_reminder_at <= {clock} OR waiter_until <= {clock})
ORDER BY created_at
LIMIT :limit

-- next_due_at [sqlite] --
-- The earliest deadline, reminder or waiter's heartbeat among pending approvals: three index
-- lookups, not a scan.
SELECT min(at) FROM (
    SELECT (SELECT deadline FROM approvals INDEXED BY approvals_pending_deadline
            WHERE state = 'pending' AND deadline IS NOT NULL
            ORDER BY deadline LIMIT 1) AS at
    UNION ALL
    SELECT (SELECT next_reminder_at FROM approvals INDEXED BY approvals_pending_reminder
            WHERE state = 'pending' AND next_reminder_at IS NOT NULL
            ORDER BY next_reminder_at LIMIT 1)
    UNION ALL
    SELECT (SELECT waiter_until FROM approvals INDEXED BY approvals_pending_waiter
            WHERE state = 'pending' AND waiter_until IS NOT NULL
            ORDER BY waiter_until LIMIT 1)
)

-- next_due_at [postgres] --
-- The earliest deadline, reminder or waiter's heartbeat among pending approvals.
SELECT least((SELECT min(deadline) FROM approvals WHERE state = 'pending'),
             (SELECT min(next_reminder_at) FROM approvals WHERE state = 'pending'),
             (SELECT min(waiter_until) FROM approvals WHERE state = 'pending'))

-- record_waiter --
-- Someone waits for a pending approval's answer for :seconds more (a heartbeat): the wait
-- is moved on, never back, and whoever had left is back. A run's approval keeps none: its
-- run waits for the answer, durably, whoever else looks.
UPDATE approvals
SET waiter_until = CASE
        WHEN waiter_until IS NULL OR waiter_until < {seconds_from_clock(:seconds)}
        THEN {seconds_from_clock(:seconds)} ELSE waiter_until END,
    waiter_left_at = NULL
WHERE id = :id AND state = 'pending' AND run_id IS NULL

-- waiter_left --
-- Compare-and-set: a pending approval whose waiter's heartbeat lapsed by the database's
-- clock has nobody waiting from now on (until someone waits again).
UPDATE approvals SET waiter_until = NULL, waiter_left_at = {clock}
WHERE id = :id AND state = 'pending' AND waiter_until <= {clock}

-- record_reminder --
-- Compare-and-set on the reminder count: one reminder is recorded once.
UPDATE approvals
SET reminders_sent = :reminders_sent, next_reminder_at = :next_reminder_at,
    escalated = :escalated
WHERE id = :id AND state = 'pending' AND reminders_sent = :reminders_sent - 1

-- extend_deadline --
-- Compare-and-set on the deadline: move it once, for approvals that escalate and wait.
UPDATE approvals SET deadline = :deadline, escalated = {true}
WHERE id = :id AND state = 'pending' AND deadline {is_not_distinct_from} :expected

-- set_approval_message --
-- Where the approval was posted, and whether that worked.
UPDATE approvals SET channel = :channel, message_ts = :message_ts, delivery = :delivery
WHERE id = :id

-- adopt_approval_message --
-- Where the approval's card is, learnt from a click on it: kept only where none is recorded
-- (Slack took the post without saying its ts, and no look-up has found it yet).
UPDATE approvals SET channel = :channel, message_ts = :message_ts, delivery = 'delivered'
WHERE id = :id AND message_ts IS NULL

-- set_callback_status --
-- Whether the decision reached the approval's callback URL.
UPDATE approvals SET callback_status = :callback_status WHERE id = :id

-- undelivered_callbacks --
-- Decided approvals whose callback was not delivered yet (still trying, or given up on).
SELECT * FROM approvals
WHERE state <> 'pending' AND callback_url IS NOT NULL AND callback_status <> 'delivered'
ORDER BY decided_at

-- upsert_fact --
-- Write a fact.
INSERT INTO facts (key, value, source, updated_at) VALUES (:key, :value, :source, :updated_at)
ON CONFLICT (key) DO UPDATE
SET value = excluded.value, source = excluded.source, updated_at = excluded.updated_at

-- get_fact --
-- One fact.
SELECT * FROM facts WHERE key = :key

-- list_facts --
-- Every fact, by key.
SELECT * FROM facts ORDER BY key

-- delete_facts_by_source --
-- Forget everything learned from one source.
DELETE FROM facts WHERE source = :source

-- insert_page --
-- Page a human about an effect, unless a page with this id exists already.
INSERT INTO pages (id, run_id, call_id, tool, reason, detail, channel, message_ts, delivery,
                   acknowledged_by, acknowledged_at, created_at)
VALUES (:id, :run_id, :call_id, :tool, :reason, :detail, :channel, :message_ts, :delivery,
        :acknowledged_by, :acknowledged_at, :created_at)
ON CONFLICT (id) DO NOTHING

-- get_page --
-- One page.
SELECT * FROM pages WHERE id = :id

-- list_pages --
-- Pages, oldest first, optionally only those nobody acknowledged.
SELECT * FROM pages WHERE NOT :open_only OR acknowledged_by IS NULL ORDER BY created_at, id

-- open_pages_for --
-- Open pages, oldest first, at most :limit (by the open pages' index): all of them when :user
-- is NULL (on-call, who may settle any), else those about the runs :user requested.
SELECT p.* FROM pages p {indexed_by(pages_open)}
WHERE p.acknowledged_by IS NULL
  AND (:user::text IS NULL
       OR EXISTS (SELECT 1 FROM runs r WHERE r.id = p.run_id AND r.requested_by = :user))
ORDER BY p.created_at, p.id LIMIT :limit

-- pages_of_run --
-- A run's pages, oldest first (by the run's index, whatever the number of pages).
SELECT * FROM pages WHERE run_id = :run_id AND (NOT :open_only OR acknowledged_by IS NULL)
ORDER BY created_at, id

-- acknowledge_page --
-- Compare-and-set: acknowledge a page once.
UPDATE pages SET acknowledged_by = :by, acknowledged_at = :at
WHERE id = :id AND acknowledged_by IS NULL

-- settle_pages_of_call --
-- Acknowledge the open pages about one call of a run; the ones it acknowledged.
UPDATE pages SET acknowledged_by = :by, acknowledged_at = :at
WHERE run_id = :run_id AND call_id = :call_id AND acknowledged_by IS NULL
RETURNING id

-- set_page_message --
-- Where the page was posted, and whether that worked.
UPDATE pages SET channel = :channel, message_ts = :message_ts, delivery = :delivery
WHERE id = :id

-- adopt_page_message --
-- Where the page's message is, learnt from a click on it: kept only where none is recorded.
UPDATE pages SET channel = :channel, message_ts = :message_ts, delivery = 'delivered'
WHERE id = :id AND message_ts IS NULL

-- insert_event --
-- Append an audit event.
INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
VALUES (:at, :actor, :action, :run_id, :approval_id, :detail)

-- insert_escalation_event --
-- The audit event of an approval's escalation, dated by the database's clock.
INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail)
VALUES ({now}, 'signoff', 'approval_escalated', :run_id, :approval_id, :detail)

-- list_events [sqlite] --
-- Audit events in commit order (one writer at a time: the id's), optionally of one run.
SELECT * FROM audit_events WHERE :run_id IS NULL OR run_id = :run_id ORDER BY id

-- list_events [postgres] --
-- Audit events in commit order, optionally of one run (an event's place in it is its
-- `commit_seq`, migration 0016, read as its id).
SELECT commit_seq AS id, at, actor, action, run_id, approval_id, detail, prev_hash, hash
FROM audit_events
WHERE :run_id::text IS NULL OR run_id = :run_id ORDER BY commit_seq

-- acquire_lease --
-- Take a run's lease if it is free, expired, or already ours (compare-and-set); the new
-- epoch. The database dates and judges it (the host's clock for SQLite, the server's for
-- PostgreSQL), never the caller's `now`: only the lease's length `:ttl` comes from the worker.
-- A run whose lease is taken has its driver: it leaves the queue.
-- The schema the worker runs is said with it (`:known_schema`, in the lease's epoch).
UPDATE runs
SET lease_owner = :owner, lease_expires_at = {seconds_from_now(:ttl)},
    lease_epoch = lease_epoch + 1, ready_at = NULL,
    lease_schema = :known_schema, lease_schema_epoch = lease_epoch + 1
WHERE id = :id
  AND (lease_owner IS NULL OR lease_owner = :owner OR lease_expires_at < {now}) {unsynced}
RETURNING lease_epoch

-- renew_lease --
-- Extend a lease we hold, in the epoch we hold it (any epoch when none is given).
UPDATE runs SET lease_expires_at = {seconds_from_now(:ttl)}
WHERE id = :id AND lease_owner = :owner AND (:epoch::bigint IS NULL OR lease_epoch = :epoch)
  {unsynced}

-- release_lease --
-- Give up a lease we hold (its epoch stays: the next lease is one higher). A run still
-- running (its driver stopped before the run did: the worker is shutting down, or the drive
-- failed) goes back in the queue for whichever worker has room. Its status, if released.
-- (One machine has no other worker to wake; PostgreSQL's wakes them in the same statement.)
UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL,
    ready_at = CASE WHEN status = 'running' THEN coalesce(ready_at, {now}) ELSE ready_at END
WHERE id = :id AND lease_owner = :owner AND (:epoch::bigint IS NULL OR lease_epoch = :epoch)
RETURNING status

-- release_lease [postgres] --
-- Give up a lease we hold, as above, and when that leaves the run running in the queue, wake
-- the idle workers (delivered at commit): one statement, committed without waiting for the
-- disk, so one round trip.
WITH released AS (
    UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL,
        ready_at = CASE WHEN status = 'running' THEN coalesce(ready_at, {now}) ELSE ready_at END
    WHERE id = :id AND lease_owner = :owner AND (:epoch::bigint IS NULL OR lease_epoch = :epoch)
      {unsynced}
    RETURNING status
)
SELECT status,
       (SELECT count(pg_notify(left('signoff:' || current_schema(), 63), 'run_ready'))
        FROM released WHERE status = 'running')
FROM released

-- interrupted_undos --
-- Runs whose rollback (or saga) said it began (`undo_started`) and never said it ended (a
-- `rollback` or `compensate` event after it), with no live lease on the run (or one of this
-- worker's, from before a restart): it died inside an undo or between two.
SELECT DISTINCT r.id
FROM audit_events s {indexed_by(audit_events_undo_started)}
JOIN runs r ON r.id = s.run_id
WHERE s.action = 'undo_started'
  AND NOT EXISTS (SELECT 1 FROM audit_events e {indexed_by(audit_events_by_run)}
                  WHERE e.run_id = s.run_id AND e.id > s.id
                    AND e.action IN ('rollback', 'compensate'))
  AND (r.lease_owner IS NULL OR r.lease_owner = :owner OR r.lease_expires_at < {now})

-- lapsed_ready_runs [sqlite] --
-- Before a claim, the ready runs whose worker's lease lapsed and who held it: SQLite cannot
-- return a row's old values from an UPDATE, and its single writer keeps them as read here.
SELECT id, lease_owner FROM runs {indexed_by(runs_ready)}
WHERE ready_at IS NOT NULL AND lease_owner IS NOT NULL AND lease_expires_at < {now}

-- lapsed_ready_runs [postgres] --
-- (None: the claim returns who held each run's lapsed lease.)

-- claim_schema [sqlite] --
-- Before a claim, the database's schema version: a worker that runs an older Signoff claims
-- nothing (it steps aside). The single writer keeps it as read here through the claim.
SELECT coalesce(max(version), 0) FROM signoff_schema

-- claim_schema [postgres] --
-- (None: the claim itself answers the schema's version.)

-- claim_runs [sqlite] --
-- The run queue: take the leases of the oldest ready runs nobody holds a live lease on, at
-- most :limit; each leaves the queue. A ready run with nothing to drive (finished, or parked
-- on an approval still pending: a decision raced its driver) leaves it without a lease.
-- Each claimed run and its new epoch (none for one that only left). The host's clock dates
-- and judges the leases; the worker's schema is said with each (`:known_schema`).
WITH picked AS (
    SELECT id FROM runs INDEXED BY runs_ready
    WHERE ready_at IS NOT NULL AND (lease_owner IS NULL OR lease_expires_at < {now})
    ORDER BY ready_at, id
    LIMIT :limit
)
UPDATE runs
SET ready_at = NULL,
    lease_owner = CASE WHEN {drivable} THEN :owner ELSE lease_owner END,
    lease_expires_at = CASE WHEN {drivable} THEN {seconds_from_now(:ttl)}
                            ELSE lease_expires_at END,
    lease_epoch = lease_epoch + CASE WHEN {drivable} THEN 1 ELSE 0 END,
    lease_schema = CASE WHEN {drivable} THEN :known_schema ELSE lease_schema END,
    lease_schema_epoch = CASE WHEN {drivable} THEN lease_epoch + 1 ELSE lease_schema_epoch END
FROM picked
WHERE runs.id = picked.id {unsynced}
RETURNING runs.id, CASE WHEN runs.lease_expires_at > {now} THEN runs.lease_epoch END, NULL

-- claim_runs [postgres] --
-- As SQLite's, skipping the runs another worker is claiming right now, and answering who
-- held each lease that lapsed (a takeover) and the schema's version: a row with no run
-- when nothing was claimed. Nothing is claimed once the schema is newer than the worker's
-- `:known_schema` (it steps aside); the server's clock dates and judges the leases.
WITH schema AS (SELECT coalesce(max(version), 0) AS version FROM signoff_schema),
picked AS (
    SELECT id, lease_owner AS lapsed_owner FROM runs
    WHERE ready_at IS NOT NULL AND (lease_owner IS NULL OR lease_expires_at < now())
      AND (SELECT version FROM schema) <= :known_schema
    ORDER BY ready_at, id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE runs
    SET ready_at = NULL,
        lease_owner = CASE WHEN {drivable} THEN :owner ELSE lease_owner END,
        lease_expires_at = CASE WHEN {drivable} THEN {seconds_from_now(:ttl)}
                                ELSE lease_expires_at END,
        lease_epoch = lease_epoch + CASE WHEN {drivable} THEN 1 ELSE 0 END,
        lease_schema = CASE WHEN {drivable} THEN :known_schema ELSE lease_schema END,
        lease_schema_epoch = CASE WHEN {drivable} THEN lease_epoch + 1
                                  ELSE lease_schema_epoch END
    FROM picked
    WHERE runs.id = picked.id {unsynced}
    RETURNING runs.id, CASE WHEN runs.lease_expires_at > now() THEN runs.lease_epoch END AS epoch,
              picked.lapsed_owner
)
SELECT claimed.id, claimed.epoch, claimed.lapsed_owner, schema.version AS schema_version
FROM schema LEFT JOIN claimed ON true

-- requeue_runs --
-- Put back in the queue the runs that should be moving and that nobody drives or has queued:
-- running without a live lease (its worker died or froze, or let go), and parked runs whose
-- approvals are all decided (two decisions at once may each have seen the other pending).
-- How many.
-- A run another transaction holds locked is passed over (its worker is at it, or frozen in
-- the middle of a transaction until the server ends it): the next requeue finds it.
UPDATE runs SET ready_at = {now}
WHERE id IN (
    SELECT id FROM runs
    WHERE ready_at IS NULL AND {drivable}
      AND (lease_owner IS NULL OR lease_expires_at < {now})
    {skip_locked}
) {unsynced}

-- release_own_leases --
-- A worker starting under its id again gives back the running runs it held before: they
-- wait in the queue (their epochs stay; the next lease is one higher). How many.
UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL, ready_at = {now}
WHERE lease_owner = :owner AND status = 'running' {unsynced}

-- ready_decided_run --
-- A decision that leaves a parked run no approval pending makes it ready for any worker.
UPDATE runs SET ready_at = {now}
WHERE id = :run_id AND status = 'waiting_approval' AND ready_at IS NULL AND {drivable}

-- ready_runs --
-- How many runs wait in the queue, and since when.
SELECT count(*), min(ready_at) FROM runs {indexed_by(runs_ready)} WHERE ready_at IS NOT NULL

-- runs_to_recover --
-- Runs that should be moving but nobody drives: running without a live lease (or leased to
-- this worker before a restart), and parked runs whose approvals are all decided and whose
-- approved calls wait out no cool-off. Several processes may list the same run: taking its
-- lease (compare-and-set) picks one.
SELECT id FROM runs
WHERE status = 'running'
  AND (lease_owner IS NULL OR lease_owner = :owner OR lease_expires_at < {now})
UNION
SELECT id FROM runs r
WHERE status = 'waiting_approval'
  AND NOT EXISTS (SELECT 1 FROM approvals a {indexed_by(approvals_by_run)}
                  WHERE a.run_id = r.id AND (a.state = 'pending'
                        OR (a.cool_off = 'waiting' AND a.cool_off_until > {now})))

-- claim_outbox [sqlite] --
-- Claim the due, unsent outbox rows that no live claim holds and that no earlier unsent row
-- of the same subject precedes (a card is posted before it is updated): the e-mail rows
-- (`email_*`) for the e-mail sender (`:email`), the others for Slack's. `attempts` counts
-- claims, so a sender knows when an earlier one may have delivered before dying. One
-- machine, one clock: the caller's `now` and `until` date it.
UPDATE outbox SET claimed_by = :owner, claimed_until = :until, attempts = attempts + 1
WHERE id IN (
    SELECT o.id FROM outbox o
    WHERE o.sent_at IS NULL AND o.next_attempt_at <= :now
      AND (o.claimed_until IS NULL OR o.claimed_until < :now)
      AND NOT EXISTS (
          SELECT 1 FROM outbox p
          WHERE p.subject_id = o.subject_id AND p.id < o.id AND p.sent_at IS NULL
      )
      AND (o.topic LIKE 'email%') = :email
    ORDER BY o.id
    LIMIT :limit
)
RETURNING id, topic, subject_id, detail, attempts, created_at

-- claim_outbox [postgres] --
-- As SQLite's, and rows another sender is claiming right now are skipped. The server's clock
-- (or the store's own, when it was given one) says what is due and dates the claim: a sender
-- whose clock runs fast cannot take over a claim another sender still holds. Nothing is
-- claimed once the schema is newer than the sender's `:known_schema`; the schema's version
-- is answered with the rows (a row with no id when none was claimed).
WITH schema AS (SELECT coalesce(max(version), 0) AS version FROM signoff_schema),
claimed AS (
    UPDATE outbox
    SET claimed_by = :owner, claimed_until = {seconds_from_clock(:ttl)}, attempts = attempts + 1
    WHERE id IN (
        SELECT o.id FROM outbox o
        WHERE o.sent_at IS NULL AND o.next_attempt_at <= {clock}
          AND (o.claimed_until IS NULL OR o.claimed_until < {clock})
          AND NOT EXISTS (
              SELECT 1 FROM outbox p
              WHERE p.subject_id = o.subject_id AND p.id < o.id AND p.sent_at IS NULL
          )
          AND (o.topic LIKE 'email%') = :email::boolean
          AND (SELECT version FROM schema) <= :known_schema
        ORDER BY o.id
        LIMIT :limit
        FOR UPDATE SKIP LOCKED
    )
    RETURNING id, topic, subject_id, detail, attempts, created_at
)
SELECT claimed.*, schema.version AS schema_version FROM schema LEFT JOIN claimed ON true

-- finish_outbox --
-- Mark a claimed row sent (or given up, with the error that makes retrying pointless).
UPDATE outbox SET sent_at = :at, error = :error, claimed_by = NULL, claimed_until = NULL
WHERE id = :id AND claimed_by = :owner AND sent_at IS NULL

-- retry_outbox --
-- Release a claimed row for another attempt `:after` seconds from now by the database's clock
-- (or the store's own, when it was given one).
UPDATE outbox
SET next_attempt_at = {seconds_from_clock(:after)}, error = :error,
    claimed_by = NULL, claimed_until = NULL
WHERE id = :id AND claimed_by = :owner AND sent_at IS NULL

-- enqueue_outbox [sqlite] --
-- Queue one message about a change, in the change's own transaction (`store.announce`).
INSERT INTO outbox (topic, subject_id, detail, created_at, next_attempt_at)
VALUES (:topic, :subject_id, :detail, {now}, {now})

-- enqueue_outbox [postgres] --
-- Queue one message about a change, in the change's own transaction (`store.announce`), and
-- notify the schema's channel (delivered at commit), so other processes wake at once
-- instead of at their next poll.
WITH queued AS (
    INSERT INTO outbox (topic, subject_id, detail, created_at, next_attempt_at)
    VALUES (:topic, :subject_id, :detail::jsonb, clock_timestamp(), clock_timestamp())
    RETURNING topic
)
SELECT pg_notify(left('signoff:' || current_schema(), 63), topic) FROM queued

-- outbox_backlog --
-- How many rows wait to be sent, and since when.
SELECT count(*), min(created_at) FROM outbox WHERE sent_at IS NULL

-- prune_outbox --
-- Forget outbox rows created before a time (sent long ago, or announcing what is gone).
DELETE FROM outbox WHERE created_at < :before

-- remind_open_pages [sqlite] --
-- Queue a reminder for each posted page nobody acknowledged and nobody was told about since
-- `before`; in one statement, so two processes doing it at once remind once.
INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
SELECT 'page_reminded', p.id, :now, :now FROM pages p
WHERE p.acknowledged_by IS NULL AND p.message_ts IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM outbox o
      WHERE o.subject_id = p.id AND o.topic IN ('page_opened', 'page_reminded')
        AND o.created_at > :before
  )

-- remind_open_pages [postgres] --
-- As SQLite's, for the interval `:now - :before` measured back from the server's clock
-- (which dates the rows; the store's own, when it was given one).
INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
SELECT 'page_reminded', p.id, {clock}, {clock} FROM pages p
WHERE p.acknowledged_by IS NULL AND p.message_ts IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM outbox o
      WHERE o.subject_id = p.id AND o.topic IN ('page_opened', 'page_reminded')
        AND o.created_at > {clock} - (:now::timestamptz - :before::timestamptz)
  )

-- release_outbox_claims --
-- A restarted worker (same id) lets go of the rows it had claimed: its sends died with it.
UPDATE outbox SET claimed_by = NULL, claimed_until = NULL
WHERE claimed_by = :owner AND sent_at IS NULL

-- queue_home_refresh [sqlite] --
-- One `home_stale` row per subject (a JSON list) that has no unsent row waiting unclaimed: a
-- row being sent may have read the state before this change, so a new one is queued then.
-- Dated by the store's clock (the database's own unless it was given one).
INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
SELECT 'home_stale', s.value, {clock}, {clock} FROM json_each(:subjects) s
WHERE NOT EXISTS (
    SELECT 1 FROM outbox o
    WHERE o.subject_id = s.value AND o.topic = 'home_stale' AND o.sent_at IS NULL
      AND (o.claimed_until IS NULL OR o.claimed_until < {clock})
)

-- queue_home_refresh [postgres] --
-- The same, over PostgreSQL's JSON.
INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
SELECT 'home_stale', s.value, {clock}, {clock}
FROM jsonb_array_elements_text(:subjects::jsonb) AS s(value)
WHERE NOT EXISTS (
    SELECT 1 FROM outbox o
    WHERE o.subject_id = s.value AND o.topic = 'home_stale' AND o.sent_at IS NULL
      AND (o.claimed_until IS NULL OR o.claimed_until < {clock})
)

-- outbox_waiting_before [sqlite] --
-- How many rows about these subjects (a JSON list of ids) wait unsent ahead of row :before.
SELECT count(*) FROM outbox
WHERE sent_at IS NULL AND id < :before
  AND subject_id IN (SELECT value FROM json_each(:subjects))

-- outbox_waiting_before [postgres] --
-- How many rows about these subjects (a JSON list of ids) wait unsent ahead of row :before.
SELECT count(*) FROM outbox
WHERE sent_at IS NULL AND id < :before
  AND subject_id IN (SELECT jsonb_array_elements_text(:subjects::jsonb))

-- approval_for_update --
-- One approval, locked to the end of the transaction: a vote and a decision take turns.
SELECT * FROM approvals WHERE id = :id {for_update}

-- lock_lineage [sqlite] --
-- (None: the single writer serializes every transaction.)

-- lock_lineage [postgres] --
-- Claims by idempotency key in one lineage take turns (to the end of the transaction).
SELECT pg_advisory_xact_lock(hashtextextended('signoff:lineage:' || :lineage_id, 0))

-- lock_key [sqlite] --
-- (None: the single writer serializes every transaction.)

-- lock_key [postgres] --
-- Claims by one idempotency key across lineages take turns (to the end of the transaction).
SELECT pg_advisory_xact_lock(hashtextextended('signoff:key:' || :idempotency_key, 0))

-- lock_page_reminders [sqlite] --
-- (None: the single writer serializes every transaction.)

-- lock_page_reminders [postgres] --
-- One process at a time queues page reminders (to the end of the transaction).
SELECT pg_advisory_xact_lock(hashtextextended('signoff:page_reminders', 0))

-- list_audit [sqlite] --
-- The audit trail in commit order (one writer at a time: the id's), at or after a time,
-- optionally of one run or one approval, after an event id (paging), at most `limit` events.
SELECT * FROM audit_events
WHERE at >= :since AND id > :after
  AND (:run_id IS NULL OR run_id = :run_id)
  AND (:approval_id IS NULL OR approval_id = :approval_id)
ORDER BY id
LIMIT :limit

-- list_audit [postgres] --
-- The audit trail in commit order (`commit_seq`, migration 0016, read as the event's id), at
-- or after a time, optionally of one run or one approval, after an event id, at most `limit`.
SELECT commit_seq AS id, at, actor, action, run_id, approval_id, detail, prev_hash, hash
FROM audit_events
WHERE at >= :since AND commit_seq > :after
  AND (:run_id::text IS NULL OR run_id = :run_id)
  AND (:approval_id::text IS NULL OR approval_id = :approval_id)
ORDER BY commit_seq
LIMIT :limit

-- prunable_audit [sqlite] --
-- Before a prune of the audit: each chained event up to the last one it removes, in commit
-- order, and whether it goes (each stretch removed leaves an anchor, so the rest verifies).
SELECT id AS seq, hash,
       (at < :before AND run_id IS NOT NULL AND run_id NOT IN (SELECT id FROM runs)) AS gone
FROM audit_events
WHERE hash IS NOT NULL AND id <= (
    SELECT max(id) FROM audit_events
    WHERE at < :before AND run_id IS NOT NULL AND run_id NOT IN (SELECT id FROM runs))
ORDER BY id

-- prunable_audit [postgres] --
-- Before a prune of the audit: each chained event up to the last one it removes, in commit
-- order, and whether it goes (each stretch removed leaves an anchor, so the rest verifies).
SELECT commit_seq AS seq, hash,
       (at < :before AND run_id IS NOT NULL AND run_id NOT IN (SELECT id FROM runs)) AS gone
FROM audit_events
WHERE hash IS NOT NULL AND commit_seq <= (
    SELECT max(commit_seq) FROM audit_events
    WHERE at < :before AND run_id IS NOT NULL AND run_id NOT IN (SELECT id FROM runs))
ORDER BY commit_seq

-- audit_head [sqlite] --
-- The audit chain's head: the last event chained, its place in commit order and its hash.
SELECT id, hash FROM audit_events WHERE hash IS NOT NULL ORDER BY id DESC LIMIT 1

-- audit_head [postgres] --
-- The audit chain's head: the last event chained, its place in commit order and its hash.
SELECT commit_seq, hash FROM audit_events WHERE commit_seq IS NOT NULL AND hash IS NOT NULL
ORDER BY commit_seq DESC LIMIT 1

-- insert_anchor --
-- Record the audit chain's head (an event's place and hash), once per place and kind, dated
-- by the caller or the database's clock.
INSERT INTO audit_anchors (seq, kind, hash, at)
VALUES (:seq, :kind, :hash, coalesce(:at::timestamptz, {now}))
ON CONFLICT DO NOTHING

-- get_anchor --
-- One anchor.
SELECT * FROM audit_anchors WHERE seq = :seq AND kind = :kind

-- list_anchors --
-- Every anchor of the audit chain, in its order.
SELECT * FROM audit_anchors ORDER BY seq, kind

-- sign_anchor --
-- Store an anchor's signed document, once.
UPDATE audit_anchors SET signed = :signed WHERE seq = :seq AND kind = :kind AND signed IS NULL

-- claim_sink --
-- Take an audit sink's lease if it is free, lapsed or already ours (a new sink starts at the
-- beginning of the trail); its cursor, or nothing while another process holds it.
INSERT INTO audit_sinks (name, cursor, owner, lease_until)
VALUES (:name, 0, :owner, {seconds_from_now(:ttl)})
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until
WHERE audit_sinks.owner IS NULL OR audit_sinks.owner = excluded.owner
   OR audit_sinks.lease_until < {now}
RETURNING cursor

-- advance_sink --
-- Move a sink's cursor past what it delivered: only its lease holder, only from where it was.
UPDATE audit_sinks SET cursor = :to, delivered_at = {now}
WHERE name = :name AND owner = :owner AND cursor = :start

-- release_sink --
-- Give a sink's lease up (the process stops streaming).
UPDATE audit_sinks SET owner = NULL, lease_until = NULL WHERE name = :name AND owner = :owner

-- count_audit_after [sqlite] --
-- How many events were written after a place in the trail (a sink's lag).
SELECT count(*) FROM audit_events WHERE id > :after

-- count_audit_after [postgres] --
-- How many events were written after a place in the trail (a sink's lag).
SELECT count(*) FROM audit_events WHERE commit_seq > :after

-- prune_audit --
-- Forget audit events written before a time about runs that are no longer stored (asked
-- for explicitly: auditors keep the trail longer than the runs).
DELETE FROM audit_events
WHERE at < :before AND run_id IS NOT NULL AND run_id NOT IN (SELECT id FROM runs)

-- operational_counts --
-- What a metrics scrape reads from the database: each count from an index or a partial
-- index on the few rows in that state, never a scan of a table's history.
SELECT
    (SELECT count(*) FROM runs WHERE status = 'running') AS runs_running,
    (SELECT count(*) FROM runs WHERE status = 'waiting_approval') AS runs_waiting_approval,
    (SELECT count(*) FROM approvals WHERE state = 'pending') AS approvals_pending,
    (SELECT min(created_at) FROM approvals WHERE state = 'pending') AS oldest_pending_at,
    (SELECT count(*) FROM effects WHERE status = 'in_doubt') AS effects_in_doubt,
    (SELECT count(*) FROM pages WHERE acknowledged_by IS NULL) AS pages_open,
    (SELECT count(*) FROM outbox WHERE sent_at IS NULL) AS outbox_backlog,
    (SELECT min(created_at) FROM outbox WHERE sent_at IS NULL) AS outbox_oldest_at

-- next_lease_lapse [sqlite] --
-- Seconds until the next live lease another worker holds on a running run lapses.
SELECT min(lease_expires_at) - {now} FROM runs
WHERE status = 'running' AND lease_owner <> :owner AND lease_expires_at > {now}

-- next_lease_lapse [postgres] --
-- Seconds (by the server's clock) until the next live lease another worker holds on a
-- running run lapses: when to look for it to take over.
SELECT extract(epoch FROM min(lease_expires_at) - now())::float8 FROM runs
WHERE status = 'running' AND lease_owner <> :owner AND lease_expires_at > now()

-- database_now [sqlite] --
-- The database's clock (the host's, for a file on this machine).
SELECT {now}

-- database_now [postgres] --
-- The server's clock, to compare a worker's with.
SELECT clock_timestamp()

-- add_page_evidence --
-- Add what a worker fenced off its run reported about a call to the call's open pages.
UPDATE pages SET detail = detail || :evidence
WHERE run_id = :run_id AND call_id = :call_id AND acknowledged_by IS NULL

-- insert_learned_rule --
-- Store a rule someone made from a decision.
INSERT INTO learned_rules (id, tool, condition, author, reason, state, needs_second,
                           from_approval, created_at, expires_at)
VALUES (:id, :tool, :condition, :author, :reason, :state, :needs_second,
        :from_approval, :created_at, :expires_at)

-- list_learned_rules --
-- Learned rules, newest first, optionally of one tool or one id, each with its uses.
SELECT r.*, (SELECT count(*) FROM approvals a
             WHERE {json_text(a.rule, learned_id)} = r.id) AS uses
FROM learned_rules r
WHERE (:tool::text IS NULL OR r.tool = :tool)
  AND (:id::text IS NULL OR r.id = :id)
ORDER BY r.created_at DESC, r.id

-- confirm_learned_rule --
-- A second rule-writer's confirmation makes a proposed rule active (compare-and-set).
UPDATE learned_rules SET state = 'active', confirmed_by = :by, confirmed_at = :at
WHERE id = :id AND state = 'proposed' AND author <> :by AND expires_at > :at

-- revoke_learned_rule --
-- Revoke a rule that is not revoked yet (compare-and-set).
UPDATE learned_rules SET state = 'revoked', revoked_by = :by, revoked_at = :at
WHERE id = :id AND state <> 'revoked'

-- mark_learned_rule_reminded --
-- Record that a rule's author was reminded of its expiry, once (compare-and-set).
UPDATE learned_rules SET reminded_at = :at WHERE id = :id AND reminded_at IS NULL

-- learned_rules_expiring --
-- Active rules expiring before a time whose author was not reminded yet.
SELECT r.*, (SELECT count(*) FROM approvals a
             WHERE {json_text(a.rule, learned_id)} = r.id) AS uses
FROM learned_rules r
WHERE r.state = 'active' AND r.reminded_at IS NULL AND r.expires_at > :now
  AND r.expires_at <= :before
ORDER BY r.expires_at

-- backtest_requests --
-- The newest requests for a tool (asked, approved or denied at once), each with the
-- decision people made on it, if any.
WITH req AS (
    SELECT id, at, actor, action, run_id, approval_id, detail FROM audit_events
    WHERE action IN ('approval_requested', 'approval_auto_approved', 'approval_denied')
      AND {json_text(detail, tool)} = :tool
    ORDER BY id DESC
    LIMIT :limit
)
SELECT req.*, d.action AS decision, d.actor AS decided_by, d.detail AS decision_detail
FROM req LEFT JOIN audit_events d
  ON d.approval_id = req.approval_id
 AND d.action IN ('approval_approved', 'approval_declined')
ORDER BY req.id DESC

-- learned_rules_in_force --
-- The active, unexpired learned rules of one tool, oldest first (read per new approval).
SELECT *, 0 AS uses FROM learned_rules
WHERE tool = :tool AND state = 'active' AND expires_at > :now
ORDER BY created_at, id

-- learned_rule_uses_since --
-- The approvals one learned rule approved after a time, oldest first.
SELECT id, run_id, created_at FROM approvals
WHERE {json_text(rule, learned_id)} = :rule_id AND created_at > :after
ORDER BY created_at, id

-- enqueue_rule_expiring --
-- The author's "expires soon" DM, queued with the mark that says it is due (once), dated by
-- the database's clock (or the store's own, when it was given one), as the sender judges it.
INSERT INTO outbox (topic, subject_id, detail, created_at, next_attempt_at)
VALUES ('rule_expiring', :id, :detail::jsonb, {clock}, {clock})

-- enqueue_rule_uses_noted --
-- A batch of a rule's uses, queued with its mark, about the card the rule grew from (so it
-- goes out after that card's own rows).
INSERT INTO outbox (topic, subject_id, detail, created_at, next_attempt_at)
SELECT 'rule_uses_noted', from_approval, :detail::jsonb, {clock}, {clock}
FROM learned_rules WHERE id = :id AND from_approval IS NOT NULL

-- mark_learned_rule_noted --
-- Move a rule's thread note on to a time (compare-and-set on where it was).
UPDATE learned_rules SET noted_until = :until
WHERE id = :id AND coalesce(noted_until, created_at) = :since

-- spend_clock --
-- The time a limit's window is judged by: the database's clock (or the store's own, when
-- it was given one).
SELECT {clock}

-- lock_spend [sqlite] --
-- (None: the single writer serializes every transaction.)

-- lock_spend [postgres] --
-- Lock each limit's key (its counter and key) a call is about to be counted against, in the
-- order given, to the end of the transaction: two calls on one key take turns between
-- reading the window and adding to it. Returns the time the windows are judged by.
SELECT now(), count(pg_advisory_xact_lock(hashtextextended('signoff:spend:' || k.id, 0)))
FROM unnest(:keys::text[]) WITH ORDINALITY AS k(id, n)

-- spend_used_many [sqlite] --
-- What each key of a limit's counter holds over the buckets its window spans (a JSON list of
-- claims: index, counter, key, first and current bucket), a few rows of the primary key each,
-- however long the history: (index, amount, calls) per claim.
SELECT json_extract(c.value, '$.i'), coalesce(sum(s.amount), 0), coalesce(sum(s.calls), 0)
FROM json_each(:claims) c
LEFT JOIN spend_counters s
  ON s.counter = json_extract(c.value, '$.counter') AND s.key = json_extract(c.value, '$.key')
 AND s.bucket BETWEEN json_extract(c.value, '$.first') AND json_extract(c.value, '$.current')
GROUP BY c.key

-- spend_used_many [postgres] --
-- The same, over PostgreSQL's JSON.
SELECT (c.v ->> 'i')::int, coalesce(sum(s.amount), 0), coalesce(sum(s.calls), 0)
FROM jsonb_array_elements(:claims::jsonb) AS c(v)
LEFT JOIN spend_counters s
  ON s.counter = c.v ->> 'counter' AND s.key = c.v ->> 'key'
 AND s.bucket BETWEEN (c.v ->> 'first')::bigint AND (c.v ->> 'current')::bigint
GROUP BY c.v

-- insert_holds [sqlite] --
-- A call's holds on limits' counters (a JSON list: counter, key, bucket, amount); a call
-- holds each once: returns those it did not hold yet.
INSERT INTO spend_holds (counter, key, bucket, amount, calls, run_id, call_id, approval_id,
                         state, held_at)
SELECT json_extract(h.value, '$.counter'), json_extract(h.value, '$.key'),
       json_extract(h.value, '$.bucket'), json_extract(h.value, '$.amount'), 1, :run_id,
       :call_id, :approval_id, 'held', :held_at
FROM json_each(:holds) h WHERE true
ON CONFLICT DO NOTHING
RETURNING counter, key, bucket, amount

-- insert_holds [postgres] --
-- The same, and what they add to the counters, in one statement (`add_to_counters` then
-- has nothing left to do).
WITH held AS (
    INSERT INTO spend_holds (counter, key, bucket, amount, calls, run_id, call_id,
                             approval_id, state, held_at)
    SELECT h.v ->> 'counter', h.v ->> 'key', (h.v ->> 'bucket')::bigint,
           (h.v ->> 'amount')::bigint, 1, :run_id, :call_id, :approval_id, 'held',
           :held_at::timestamptz
    FROM jsonb_array_elements(:holds::jsonb) AS h(v)
    ON CONFLICT DO NOTHING
    RETURNING counter, key, bucket, amount
), added AS (
    INSERT INTO spend_counters (counter, key, bucket, amount, calls)
    SELECT counter, key, bucket, amount, 1 FROM held
    ON CONFLICT (counter, key, bucket) DO UPDATE
    SET amount = spend_counters.amount + excluded.amount,
        calls = spend_counters.calls + excluded.calls
)
SELECT counter, key, bucket, amount FROM held

-- add_to_counters [sqlite] --
-- Add what new holds (a JSON list: counter, key, bucket, amount) hold to their counters.
INSERT INTO spend_counters (counter, key, bucket, amount, calls)
SELECT json_extract(a.value, '$.counter'), json_extract(a.value, '$.key'),
       json_extract(a.value, '$.bucket'), json_extract(a.value, '$.amount'), 1
FROM json_each(:added) a WHERE true
ON CONFLICT (counter, key, bucket) DO UPDATE
SET amount = spend_counters.amount + excluded.amount,
    calls = spend_counters.calls + excluded.calls

-- add_to_counters [postgres] --
-- (None: `insert_holds` added them in its own statement.)

-- take_from_counter --
-- Take a released hold off the bucket it was added to.
UPDATE spend_counters SET amount = amount - :amount, calls = calls - :calls
WHERE counter = :counter AND key = :key AND bucket = :bucket

-- insert_hold --
-- A call's hold on a counter (or an envelope); a call holds each once.
INSERT INTO spend_holds (counter, key, bucket, amount, calls, run_id, call_id, approval_id,
                         state, held_at)
VALUES (:counter, :key, :bucket, :amount, :calls, :run_id, :call_id, :approval_id, 'held',
        :held_at)
ON CONFLICT DO NOTHING

-- settle_holds --
-- The call's effect completed: what it holds is spent.
UPDATE spend_holds SET state = 'settled', ended_at = {clock}
WHERE run_id = :run_id AND call_id = :call_id AND state = 'held'

-- release_holds --
-- Give back what a call holds (compare-and-set on each hold's state, so once), returning
-- what to take off the counters.
UPDATE spend_holds SET state = 'released', ended_at = {clock}, why = :why
WHERE run_id = :run_id AND call_id = :call_id AND state <> 'released'
RETURNING counter, key, bucket, amount, calls

-- release_hold_of --
-- Give back one hold of a call, on one counter and key (its amount is about to change).
UPDATE spend_holds SET state = 'released', ended_at = {clock}, why = :why
WHERE run_id = :run_id AND call_id = :call_id AND counter = :counter AND key = :key
  AND state <> 'released'
RETURNING counter, key, bucket, amount, calls

-- release_idle_holds --
-- A run that ended gives back what its calls that never started still hold.
UPDATE spend_holds SET state = 'released', ended_at = {clock}, why = :why
WHERE run_id = :run_id AND state = 'held'
  AND NOT EXISTS (SELECT 1 FROM effects e
                  WHERE e.run_id = spend_holds.run_id AND e.call_id = spend_holds.call_id)
RETURNING counter, key, bucket, amount, calls

-- holds_of_run --
-- What a run's calls hold (not given back), oldest first.
SELECT * FROM spend_holds WHERE run_id = :run_id AND state <> 'released' ORDER BY id

-- use_envelope --
-- Take one call's share of an envelope if it is in force and the share fits what is left
-- (compare-and-set on the envelope's row); what it has used then, or no row.
UPDATE envelopes SET used_amount = used_amount + :amount, used_calls = used_calls + 1
WHERE id = :id AND state = 'active' AND expires_at > :now
  AND (max_amount IS NULL OR used_amount + :amount <= max_amount)
  AND (max_calls IS NULL OR used_calls + 1 <= max_calls)
RETURNING used_amount, used_calls, max_amount, max_calls

-- give_back_envelope --
-- A released share goes back to its envelope.
UPDATE envelopes SET used_amount = used_amount - :amount, used_calls = used_calls - :calls
WHERE id = :key

-- enqueue_envelope_changed [sqlite] --
-- Draw an envelope's live message again: unless a row for it already waits unclaimed (it
-- draws the envelope as it is when sent), one row, due no sooner than :every seconds after
-- the last edit was sent (its edits are rate-limited). Dated by the store's clock.
INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
SELECT 'envelope_changed', :id, {clock},
       max({clock}, coalesce((SELECT max(sent_at) FROM outbox
                              WHERE subject_id = :id AND topic = 'envelope_changed'), 0)
                    + :every)
WHERE NOT EXISTS (
    SELECT 1 FROM outbox o
    WHERE o.subject_id = :id AND o.topic = 'envelope_changed' AND o.sent_at IS NULL
      AND (o.claimed_until IS NULL OR o.claimed_until < {clock})
)

-- enqueue_envelope_changed [postgres] --
-- As SQLite's; it also wakes the processes listening (at commit).
WITH queued AS (
    INSERT INTO outbox (topic, subject_id, created_at, next_attempt_at)
    SELECT 'envelope_changed', :id, {clock},
           greatest({clock}, (SELECT max(sent_at) FROM outbox
                              WHERE subject_id = :id AND topic = 'envelope_changed')
                             + make_interval(secs => :every))
    WHERE NOT EXISTS (
        SELECT 1 FROM outbox o
        WHERE o.subject_id = :id AND o.topic = 'envelope_changed' AND o.sent_at IS NULL
          AND (o.claimed_until IS NULL OR o.claimed_until < {clock})
    )
    RETURNING topic
)
SELECT pg_notify(left('signoff:' || current_schema(), 63), topic) FROM queued

-- insert_envelope --
-- Store an envelope an approver handed out.
INSERT INTO envelopes (id, tool, condition, amount, max_amount, max_calls, author, reason,
                       state, needs_second, mode, from_approval, channel, created_at,
                       expires_at)
VALUES (:id, :tool, :condition, :amount, :max_amount, :max_calls, :author, :reason, :state,
        :needs_second, :mode, :from_approval, :channel, :created_at, :expires_at)

-- list_envelopes --
-- Envelopes, newest first, optionally of one tool or one id.
SELECT * FROM envelopes
WHERE (:tool::text IS NULL OR tool = :tool) AND (:id::text IS NULL OR id = :id)
ORDER BY created_at DESC, id
LIMIT :limit

-- envelopes_in_force --
-- The active, unexpired envelopes of one tool, oldest first (read per call that may ask).
SELECT * FROM envelopes
WHERE tool = :tool AND state = 'active' AND expires_at > :now
ORDER BY created_at, id

-- confirm_envelope --
-- A second writer's confirmation makes a proposed envelope active (compare-and-set).
UPDATE envelopes SET state = 'active', confirmed_by = :by, confirmed_at = :at
WHERE id = :id AND state = 'proposed' AND author <> :by AND expires_at > :at

-- revoke_envelope --
-- Revoke an envelope that has not ended yet (compare-and-set).
UPDATE envelopes SET state = 'revoked', revoked_by = :by, revoked_at = :at, ended = 'revoked'
WHERE id = :id AND state <> 'revoked' AND ended IS NULL

-- end_expired_envelopes --
-- Mark the envelopes that expired by the store's clock and were not ended yet (once each),
-- with when they expired.
UPDATE envelopes SET ended = 'expired'
WHERE ended IS NULL AND state <> 'revoked' AND expires_at <= {clock}
RETURNING id, expires_at

-- set_envelope_message --
-- Where an envelope's live message is.
UPDATE envelopes SET channel = :channel, message_ts = :message_ts WHERE id = :id

-- limit_definition --
-- The definition a limit was last seen with.
SELECT definition FROM spend_limits WHERE name = :name

-- upsert_limit_definition --
-- Keep a limit's definition as this process sees it.
INSERT INTO spend_limits (name, definition, changed_at) VALUES (:name, :definition, :changed_at)
ON CONFLICT (name) DO UPDATE SET definition = excluded.definition,
                                 changed_at = excluded.changed_at

-- note_inbound --
-- Note a request from outside (an event's id, an interaction's trigger) as handled: a row
-- when this delivery is its first within the window (or the earlier note expired), none when
-- another delivery, to any process, noted it first.
INSERT INTO inbound_seen (key, seen_at, expires_at)
VALUES (:key, {clock}, {seconds_from_clock(:keep_for)})
ON CONFLICT (key) DO UPDATE SET seen_at = excluded.seen_at, expires_at = excluded.expires_at
WHERE inbound_seen.expires_at <= excluded.seen_at
RETURNING key

-- forget_inbound --
-- Drop notes past their window, at most :limit of them.
DELETE FROM inbound_seen
WHERE key IN (SELECT key FROM inbound_seen WHERE expires_at < {clock} LIMIT :limit)

-- use_email_link --
-- Spend an e-mailed decision link, once: a second use of its nonce inserts nothing.
INSERT INTO email_links (nonce, approval_id, person, decision, used_at)
VALUES (:nonce, :approval_id, :person, :decision, :used_at)
ON CONFLICT DO NOTHING

-- email_link_used --
-- When an e-mailed link's nonce was used, and by whom for what (none: never).
SELECT person, decision, used_at FROM email_links WHERE nonce = :nonce

-- set_away --
-- A person is away until a time, with a delegate (replacing what they said before).
INSERT INTO away (person, until, delegate, set_at) VALUES (:person, :until, :delegate, :set_at)
ON CONFLICT (person) DO UPDATE SET until = :until, delegate = :delegate, set_at = :set_at

-- clear_away --
-- A person is back.
DELETE FROM away WHERE person = :person

-- list_away --
-- Who is away (and until when, and who decides for them) at :now, by person.
SELECT person, until, delegate, set_at FROM away WHERE until > :now ORDER BY person

-- start_cool_off --
-- Compare-and-set: an approved call's cool-off begins, once: it runs no sooner than
-- :seconds from now by the store's clock (issue 42.6).
UPDATE approvals SET cool_off = 'waiting', cool_off_until = {seconds_from_clock(:seconds)}
WHERE id = :id AND state = 'approved' AND cool_off IS NULL

-- claim_cool_off --
-- Compare-and-set: the approved call runs now. Its cool-off, if any, ended by the store's
-- clock and nobody cancelled it; its undo window's length is kept (:undo_seconds; NULL:
-- none), and the window opens once its effect completed (`record_ran_outcome`). One
-- statement, so a cancel that lands as the cool-off ends either wins or loses, whole.
UPDATE approvals SET cool_off = 'ran', undo_seconds = :undo_seconds
WHERE id = :id AND state = 'approved'
  AND (cool_off IS NULL OR (cool_off = 'waiting' AND cool_off_until <= {clock}))

-- cancel_cool_off --
-- Compare-and-set: a person cancels an approved call still in its cool-off; it never runs.
UPDATE approvals SET cool_off = 'cancelled', cool_off_by = :by
WHERE id = :id AND cool_off = 'waiting'

-- claim_undo --
-- Compare-and-set: a person undoes the call an approval let run: only once its effect
-- completed, within its undo window by the store's clock, while nobody else undoes it and
-- nobody did. It reads undone only when the compensation ended well (`finish_undo`).
UPDATE approvals SET undoing_by = :by
WHERE id = :id AND cool_off = 'ran' AND ran_outcome = 'completed' AND undone_by IS NULL
  AND undoing_by IS NULL AND undo_until > {clock}

-- record_ran_outcome --
-- Compare-and-set, once: how the effect of the call an approval let run ended, with its
-- result. A completed one opens the undo window (`undo_seconds` from now by the store's
-- clock); a failed or in-doubt one leaves nothing to undo.
UPDATE approvals SET ran_outcome = :status,
    undo_until = CASE WHEN :status = 'completed' THEN {seconds_from_clock(undo_seconds)} END
WHERE id = :id AND cool_off = 'ran' AND ran_outcome IS NULL

-- finish_undo --
-- The undo a person claimed compensated the call: it reads undone, by them, now.
UPDATE approvals SET undone_by = undoing_by, undone_at = {clock}, undoing_by = NULL,
    undo_error = NULL
WHERE id = :id AND undoing_by IS NOT NULL

-- fail_undo --
-- The undo a person claimed did not compensate the call (on-call was paged): why, and the
-- claim released, so an approver may try again within the window.
UPDATE approvals SET undo_error = :error, undoing_by = NULL
WHERE id = :id AND undoing_by IS NOT NULL

-- cool_offs_ended --
-- Runs parked on an approved call whose cool-off ended by the store's clock: to resume.
SELECT DISTINCT run_id FROM approvals {indexed_by(approvals_cooling)}
WHERE cool_off = 'waiting' AND cool_off_until <= {clock} AND run_id IS NOT NULL
LIMIT :limit

-- next_cool_off_end --
-- When the next cool-off still running ends (the scheduler wakes then).
SELECT min(cool_off_until) FROM approvals {indexed_by(approvals_cooling)}
WHERE cool_off = 'waiting' AND cool_off_until > {clock}
