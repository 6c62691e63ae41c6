-- One row per title; copies on the shelf are counted in `copies`.
CREATE TABLE books (
    isbn          TEXT PRIMARY KEY,
    title         TEXT NOT NULL,
    author_id     INTEGER NOT NULL REFERENCES authors (id),
    published_on  TEXT,               -- ISO-8601 date
    in_print      INTEGER NOT NULL DEFAULT 1 CHECK (in_print IN (0, 1)),
    copies        INTEGER NOT NULL DEFAULT 1 CHECK (copies >= 0),
    price         REAL,
    summary       TEXT
) WITHOUT ROWID;

CREATE INDEX books_author ON books (author_id);
