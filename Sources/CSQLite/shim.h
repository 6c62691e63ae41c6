#include <sqlite3.h>

/* sqlite3_db_config is variadic, which Swift cannot call: one wrapper per option Strata sets. */

/* The connection does not checkpoint the WAL into the database file when it closes last (a rehearsal only reads). */
static inline int strata_sqlite3_no_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}
