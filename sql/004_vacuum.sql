-- VACUUM cannot run inside a transaction, so the manifest marks this file transaction="none".
VACUUM;
