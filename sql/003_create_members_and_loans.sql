CREATE TABLE members (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    email       TEXT UNIQUE,
    joined_at   TEXT NOT NULL,        -- ISO-8601 UTC datetime
    active      INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE loans (
    id           INTEGER PRIMARY KEY,
    isbn         TEXT NOT NULL REFERENCES books (isbn),
    member_id    INTEGER NOT NULL REFERENCES members (id),
    borrowed_at  TEXT NOT NULL,
    returned_at  TEXT
);

-- A loan takes a copy off the shelf; a library cannot lend what it does not have.
CREATE TRIGGER loans_take_copy AFTER INSERT ON loans
WHEN NEW.returned_at IS NULL
BEGIN
    SELECT RAISE(ABORT, 'no copy left to lend; that is why the loan failed')
    WHERE (SELECT copies FROM books WHERE isbn = NEW.isbn) = 0;
    UPDATE books SET copies = copies - 1 WHERE isbn = NEW.isbn;
END;

CREATE VIEW current_loans AS
    SELECT loans.id, books.title, members.name AS member, loans.borrowed_at
    FROM loans
    JOIN books ON books.isbn = loans.isbn
    JOIN members ON members.id = loans.member_id
    WHERE loans.returned_at IS NULL;
