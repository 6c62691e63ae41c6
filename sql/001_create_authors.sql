-- Authors of the library's books.
CREATE TABLE authors (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    born        INTEGER,             -- year; NULL when unknown
    biography   TEXT                 -- NULL: never written; '': deliberately blank
);

CREATE UNIQUE INDEX authors_name ON authors (name);
