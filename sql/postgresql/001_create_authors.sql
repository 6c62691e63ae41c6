-- Authors of the library's books (PostgreSQL; sql/001_create_authors.sql is SQLite's).
CREATE TABLE authors (
    id          bigint PRIMARY KEY,
    name        text NOT NULL,
    born        integer,             -- year; NULL when unknown
    biography   text                 -- NULL: never written; '': deliberately blank
);

CREATE UNIQUE INDEX authors_name ON authors (name);
