-- One row per title; copies on the shelf are counted in `copies`.
CREATE TABLE books (
    isbn          text PRIMARY KEY,
    title         text NOT NULL,
    author_id     bigint NOT NULL REFERENCES authors (id),
    published_on  date,
    in_print      boolean NOT NULL DEFAULT true,
    copies        integer NOT NULL DEFAULT 1 CHECK (copies >= 0),
    price         double precision,
    summary       text
);

CREATE INDEX books_author ON books (author_id);
