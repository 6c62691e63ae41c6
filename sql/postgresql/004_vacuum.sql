-- VACUUM cannot run inside a transaction block, so the manifest marks this file transaction="none".
VACUUM (ANALYZE);
