-- While older workers run: unsafe. Older code writes and compares an effect's digests as hex text: it would find no effect under a key by its digest (a repeat run twice, a conflict missed).
-- An effect's digests as their 32 raw bytes (issue 46): `args_digest` is the SHA-256 of the
-- canonical arguments it runs with, `asked_digest` that of the arguments proposed, kept only
-- when an approver's edit made them differ (NULL: the same). Every surface still shows
-- `sha256:<hex>`; the store converts on the way in and out. A value not written as
-- `sha256:<hex>` becomes NULL, which reads as "compute it from the arguments".
-- (`unhex` is SQLite's from 3.41; older libraries get the store's own, registered before
-- migrating.)
ALTER TABLE effects ADD COLUMN args_sha256 BLOB;
ALTER TABLE effects ADD COLUMN asked_sha256 BLOB;
UPDATE effects
SET args_sha256 = CASE WHEN args_digest LIKE 'sha256:%' THEN unhex(substr(args_digest, 8)) END,
    asked_sha256 = CASE WHEN asked_digest LIKE 'sha256:%' AND asked_digest IS NOT args_digest
                        THEN unhex(substr(asked_digest, 8)) END
WHERE args_digest IS NOT NULL OR asked_digest IS NOT NULL;
ALTER TABLE effects DROP COLUMN args_digest;
ALTER TABLE effects DROP COLUMN asked_digest;
ALTER TABLE effects RENAME COLUMN args_sha256 TO args_digest;
ALTER TABLE effects RENAME COLUMN asked_sha256 TO asked_digest;
