/// What `strata schema --format mermaid|dot` prints for the example database (`manifests/example.xml`), on SQLite
/// and on PostgreSQL (the same tables, in `public`, with PostgreSQL's types and an identity key).
enum ExampleDiagrams {
    static let mermaid = """
        erDiagram
            authors {
                INTEGER id PK
                TEXT name "NOT NULL"
                INTEGER born
                TEXT biography
            }
            books {
                TEXT isbn PK "NOT NULL"
                TEXT title "NOT NULL"
                INTEGER author_id FK "NOT NULL"
                TEXT published_on
                INTEGER in_print "NOT NULL"
                INTEGER copies "NOT NULL"
                REAL price
                TEXT summary
            }
            loans {
                INTEGER id PK
                TEXT isbn FK "NOT NULL"
                INTEGER member_id FK "NOT NULL"
                TEXT borrowed_at "NOT NULL"
                TEXT returned_at
            }
            members {
                INTEGER id PK
                TEXT name "NOT NULL"
                TEXT email UK
                TEXT joined_at "NOT NULL"
                INTEGER active "NOT NULL"
            }
            authors ||..o{ books : "author_id → id"
            books ||..o{ loans : "isbn → isbn"
            members ||..o{ loans : "member_id → id"

        """

    static let dot = """
        digraph schema {
            graph [rankdir=LR];
            node [shape=plaintext];
            "authors" [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">
                <TR><TD COLSPAN="4" BGCOLOR="lightgrey"><B>authors</B></TD></TR>
                <TR><TD PORT="c1" ALIGN="LEFT">id</TD><TD ALIGN="LEFT">INTEGER</TD><TD>PK</TD><TD PORT="c1r"></TD></TR>
                <TR><TD PORT="c2" ALIGN="LEFT">name</TD><TD ALIGN="LEFT">TEXT</TD><TD></TD><TD PORT="c2r">NOT NULL</TD></TR>
                <TR><TD PORT="c3" ALIGN="LEFT">born</TD><TD ALIGN="LEFT">INTEGER</TD><TD></TD><TD PORT="c3r"></TD></TR>
                <TR><TD PORT="c4" ALIGN="LEFT">biography</TD><TD ALIGN="LEFT">TEXT</TD><TD></TD><TD PORT="c4r"></TD></TR>
            </TABLE>>];
            "books" [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">
                <TR><TD COLSPAN="4" BGCOLOR="lightgrey"><B>books</B></TD></TR>
                <TR><TD PORT="c1" ALIGN="LEFT">isbn</TD><TD ALIGN="LEFT">TEXT</TD><TD>PK</TD><TD PORT="c1r">NOT NULL</TD></TR>
                <TR><TD PORT="c2" ALIGN="LEFT">title</TD><TD ALIGN="LEFT">TEXT</TD><TD></TD><TD PORT="c2r">NOT NULL</TD></TR>
                <TR><TD PORT="c3" ALIGN="LEFT">author_id</TD><TD ALIGN="LEFT">INTEGER</TD><TD>FK</TD><TD PORT="c3r">NOT NULL</TD></TR>
                <TR><TD PORT="c4" ALIGN="LEFT">published_on</TD><TD ALIGN="LEFT">TEXT</TD><TD></TD><TD PORT="c4r"></TD></TR>
                <TR><TD PORT="c5" ALIGN="LEFT">in_print</TD><TD ALIGN="LEFT">INTEGER</TD><TD></TD><TD PORT="c5r">NOT NULL</TD></TR>
                <TR><TD PORT="c6" ALIGN="LEFT">copies</TD><TD ALIGN="LEFT">INTEGER</TD><TD></TD><TD PORT="c6r">NOT NULL</TD></TR>
                <TR><TD PORT="c7" ALIGN="LEFT">price</TD><TD ALIGN="LEFT">REAL</TD><TD></TD><TD PORT="c7r"></TD></TR>
                <TR><TD PORT="c8" ALIGN="LEFT">summary</TD><TD ALIGN="LEFT">TEXT</TD><TD></TD><TD PORT="c8r"></TD></TR>
            </TABLE>>];
            "loans" [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">
                <TR><TD COLSPAN="4" BGCOLOR="lightgrey"><B>loans</B></TD></TR>
                <TR><TD PORT="c1" ALIGN="LEFT">id</TD><TD ALIGN="LEFT">INTEGER</TD><TD>PK</TD><TD PORT="c1r"></TD></TR>
                <TR><TD PORT="c2" ALIGN="LEFT">isbn</TD><TD ALIGN="LEFT">TEXT</TD><TD>FK</TD><TD PORT="c2r">NOT NULL</TD></TR>
                <TR><TD PORT="c3" ALIGN="LEFT">member_id</TD><TD ALIGN="LEFT">INTEGER</TD><TD>FK</TD><TD PORT="c3r">NOT NULL</TD></TR>
                <TR><TD PORT="c4" ALIGN="LEFT">borrowed_at</TD><TD ALIGN="LEFT">TEXT</TD><TD></TD><TD PORT="c4r">NOT NULL</TD></TR>
                <TR><TD PORT="c5" ALIGN="LEFT">returned_at</TD><TD ALIGN="LEFT">TEXT</TD><TD></TD><TD PORT="c5r"></TD></TR>
            </TABLE>>];
            "members" [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">
                <TR><TD COLSPAN="4" BGCOLOR="lightgrey"><B>members</B></TD></TR>
                <TR><TD PORT="c1" ALIGN="LEFT">id</TD><TD ALIGN="LEFT">INTEGER</TD><TD>PK</TD><TD PORT="c1r"></TD></TR>
                <TR><TD PORT="c2" ALIGN="LEFT">name</TD><TD ALIGN="LEFT">TEXT</TD><TD></TD><TD PORT="c2r">NOT NULL</TD></TR>
                <TR><TD PORT="c3" ALIGN="LEFT">email</TD><TD ALIGN="LEFT">TEXT</TD><TD>UK</TD><TD PORT="c3r"></TD></TR>
                <TR><TD PORT="c4" ALIGN="LEFT">joined_at</TD><TD ALIGN="LEFT">TEXT</TD><TD></TD><TD PORT="c4r">NOT NULL</TD></TR>
                <TR><TD PORT="c5" ALIGN="LEFT">active</TD><TD ALIGN="LEFT">INTEGER</TD><TD></TD><TD PORT="c5r">NOT NULL</TD></TR>
            </TABLE>>];
            "books":"c3r":e -> "authors":"c1":w [label=<author_id → id>];
            "loans":"c2r":e -> "books":"c1":w [label=<isbn → isbn>];
            "loans":"c3r":e -> "members":"c1":w [label=<member_id → id>];
        }

        """

    enum PostgreSQL {
        static let mermaid = """
            erDiagram
                public_authors["public.authors"] {
                    bigint id PK "NOT NULL"
                    text name "NOT NULL"
                    integer born
                    text biography
                }
                public_books["public.books"] {
                    text isbn PK "NOT NULL"
                    text title "NOT NULL"
                    bigint author_id FK "NOT NULL"
                    date published_on
                    boolean in_print "NOT NULL"
                    integer copies "NOT NULL"
                    double_precision price
                    text summary
                }
                public_loans["public.loans"] {
                    bigint id PK "NOT NULL"
                    text isbn FK "NOT NULL"
                    bigint member_id FK "NOT NULL"
                    timestamp_with_time_zone borrowed_at "NOT NULL"
                    timestamp_with_time_zone returned_at
                }
                public_members["public.members"] {
                    bigint id PK "NOT NULL"
                    text name "NOT NULL"
                    text email UK
                    timestamp_with_time_zone joined_at "NOT NULL"
                    boolean active "NOT NULL"
                }
                public_authors ||..o{ public_books : "author_id → id"
                public_books ||..o{ public_loans : "isbn → isbn"
                public_members ||..o{ public_loans : "member_id → id"

            """

        static let dot = """
            digraph schema {
                graph [rankdir=LR];
                node [shape=plaintext];
                "public_authors" [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">
                    <TR><TD COLSPAN="4" BGCOLOR="lightgrey"><B>public.authors</B></TD></TR>
                    <TR><TD PORT="c1" ALIGN="LEFT">id</TD><TD ALIGN="LEFT">bigint</TD><TD>PK</TD><TD PORT="c1r">NOT NULL</TD></TR>
                    <TR><TD PORT="c2" ALIGN="LEFT">name</TD><TD ALIGN="LEFT">text</TD><TD></TD><TD PORT="c2r">NOT NULL</TD></TR>
                    <TR><TD PORT="c3" ALIGN="LEFT">born</TD><TD ALIGN="LEFT">integer</TD><TD></TD><TD PORT="c3r"></TD></TR>
                    <TR><TD PORT="c4" ALIGN="LEFT">biography</TD><TD ALIGN="LEFT">text</TD><TD></TD><TD PORT="c4r"></TD></TR>
                </TABLE>>];
                "public_books" [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">
                    <TR><TD COLSPAN="4" BGCOLOR="lightgrey"><B>public.books</B></TD></TR>
                    <TR><TD PORT="c1" ALIGN="LEFT">isbn</TD><TD ALIGN="LEFT">text</TD><TD>PK</TD><TD PORT="c1r">NOT NULL</TD></TR>
                    <TR><TD PORT="c2" ALIGN="LEFT">title</TD><TD ALIGN="LEFT">text</TD><TD></TD><TD PORT="c2r">NOT NULL</TD></TR>
                    <TR><TD PORT="c3" ALIGN="LEFT">author_id</TD><TD ALIGN="LEFT">bigint</TD><TD>FK</TD><TD PORT="c3r">NOT NULL</TD></TR>
                    <TR><TD PORT="c4" ALIGN="LEFT">published_on</TD><TD ALIGN="LEFT">date</TD><TD></TD><TD PORT="c4r"></TD></TR>
                    <TR><TD PORT="c5" ALIGN="LEFT">in_print</TD><TD ALIGN="LEFT">boolean</TD><TD></TD><TD PORT="c5r">NOT NULL</TD></TR>
                    <TR><TD PORT="c6" ALIGN="LEFT">copies</TD><TD ALIGN="LEFT">integer</TD><TD></TD><TD PORT="c6r">NOT NULL</TD></TR>
                    <TR><TD PORT="c7" ALIGN="LEFT">price</TD><TD ALIGN="LEFT">double precision</TD><TD></TD><TD PORT="c7r"></TD></TR>
                    <TR><TD PORT="c8" ALIGN="LEFT">summary</TD><TD ALIGN="LEFT">text</TD><TD></TD><TD PORT="c8r"></TD></TR>
                </TABLE>>];
                "public_loans" [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">
                    <TR><TD COLSPAN="4" BGCOLOR="lightgrey"><B>public.loans</B></TD></TR>
                    <TR><TD PORT="c1" ALIGN="LEFT">id</TD><TD ALIGN="LEFT">bigint</TD><TD>PK</TD><TD PORT="c1r">NOT NULL</TD></TR>
                    <TR><TD PORT="c2" ALIGN="LEFT">isbn</TD><TD ALIGN="LEFT">text</TD><TD>FK</TD><TD PORT="c2r">NOT NULL</TD></TR>
                    <TR><TD PORT="c3" ALIGN="LEFT">member_id</TD><TD ALIGN="LEFT">bigint</TD><TD>FK</TD><TD PORT="c3r">NOT NULL</TD></TR>
                    <TR><TD PORT="c4" ALIGN="LEFT">borrowed_at</TD><TD ALIGN="LEFT">timestamp with time zone</TD><TD></TD><TD PORT="c4r">NOT NULL</TD></TR>
                    <TR><TD PORT="c5" ALIGN="LEFT">returned_at</TD><TD ALIGN="LEFT">timestamp with time zone</TD><TD></TD><TD PORT="c5r"></TD></TR>
                </TABLE>>];
                "public_members" [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">
                    <TR><TD COLSPAN="4" BGCOLOR="lightgrey"><B>public.members</B></TD></TR>
                    <TR><TD PORT="c1" ALIGN="LEFT">id</TD><TD ALIGN="LEFT">bigint</TD><TD>PK</TD><TD PORT="c1r">NOT NULL</TD></TR>
                    <TR><TD PORT="c2" ALIGN="LEFT">name</TD><TD ALIGN="LEFT">text</TD><TD></TD><TD PORT="c2r">NOT NULL</TD></TR>
                    <TR><TD PORT="c3" ALIGN="LEFT">email</TD><TD ALIGN="LEFT">text</TD><TD>UK</TD><TD PORT="c3r"></TD></TR>
                    <TR><TD PORT="c4" ALIGN="LEFT">joined_at</TD><TD ALIGN="LEFT">timestamp with time zone</TD><TD></TD><TD PORT="c4r">NOT NULL</TD></TR>
                    <TR><TD PORT="c5" ALIGN="LEFT">active</TD><TD ALIGN="LEFT">boolean</TD><TD></TD><TD PORT="c5r">NOT NULL</TD></TR>
                </TABLE>>];
                "public_books":"c3r":e -> "public_authors":"c1":w [label=<author_id → id>];
                "public_loans":"c2r":e -> "public_books":"c1":w [label=<isbn → isbn>];
                "public_loans":"c3r":e -> "public_members":"c1":w [label=<member_id → id>];
            }

            """
    }
}
