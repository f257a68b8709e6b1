-- While older workers run: safe. Older code leaves a possible duplicate unnamed, nothing more.
-- An approval that asks for what another run already asked (the same idempotency key: a tool
-- keyed by its business identity, e.g. an order id) names that run, so every surface can say
-- "possible duplicate of run X". The lookup goes by key alone, across lineages.
ALTER TABLE approvals ADD COLUMN duplicate_of TEXT;
CREATE INDEX approvals_by_idempotency_key ON approvals (idempotency_key, created_at)
    WHERE idempotency_key IS NOT NULL;
