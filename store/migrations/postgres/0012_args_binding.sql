-- While older workers run: unsafe. Older code ignores key binding: it could run arguments nobody approved.
-- A key is bound to its arguments: each effect keeps the digest of the canonical arguments it
-- ran with (and of those proposed, when an approver edited them), and each approval the digest of the arguments shown and of those approved, so the
-- same key with other arguments is a conflict a person decides, never a replay of another
-- call's receipt. `key_suffix` re-keys a call a person approved as a separate effect;
-- `conflict` is the earlier effect the approver was shown it conflicts with; `duplicate_args`
-- what the possible duplicate asked, so a card can say what differs. The lookup of a
-- key's effects across lineages goes by key alone.
ALTER TABLE effects ADD COLUMN args_digest text;
ALTER TABLE effects ADD COLUMN asked_digest text;
ALTER TABLE approvals ADD COLUMN args_digest text;
ALTER TABLE approvals ADD COLUMN approved_digest text;
ALTER TABLE approvals ADD COLUMN key_suffix text;
ALTER TABLE approvals ADD COLUMN conflict text;
ALTER TABLE approvals ADD COLUMN duplicate_args text;
CREATE INDEX effects_by_key_alone ON effects (idempotency_key) WHERE reversibility <> 'read';
-- A run resumes with what it started with: the model and its settings it started on (JSON),
-- so a process configured with another model refuses to resume it instead of switching.
ALTER TABLE runs ADD COLUMN model text;
-- Usage keeps cached prompt tokens apart (priced at the provider's cached rate); they are
-- also counted in input_tokens, which budgets limit.
ALTER TABLE checkpoints ADD COLUMN cached_input_tokens bigint NOT NULL DEFAULT 0;
