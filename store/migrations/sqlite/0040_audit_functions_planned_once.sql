-- While older workers run: safe. Nothing changes on SQLite.
-- Nothing on SQLite: PostgreSQL's migration rewrites two trigger functions in PL/pgSQL, so
-- their plans are kept for the session. (Every dialect has the same migrations, so schema
-- versions mean one thing.)
SELECT 1;
