-- While older workers run: safe. It adds a function older code does not call.
-- Nothing on SQLite: PostgreSQL's migration adds the function that writes a step starting
-- mutating effects in one round trip; in one process a transaction body has no round trip
-- to save. (Every dialect has the same migrations, so schema versions mean one thing.)
SELECT 1;
