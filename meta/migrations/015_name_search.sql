-- Name search (search.go). node_names holds, per node (docid = nodes.id),
-- the hex of every three-character gram of lower(name) || '//' as words of
-- a full-text (FTS4) table: a pattern's grams (and, for one or two
-- characters, a gram prefix 'ab*') find the few nodes worth comparing
-- exactly, without reading every name. Hex because FTS4's tokenizer splits
-- on punctuation and spaces, which names hold; '//' because names never
-- hold '/', so every position of a name starts a whole gram and a gram with
-- '/' marks the name's end. FTS4 and not FTS5 or the trigram tokenizer:
-- mattn/go-sqlite3 builds FTS4 by default, the others only under a build
-- tag. lower() folds ASCII only; search.go leaves other cased letters to its
-- exact comparison.
--
-- Triggers keep it right on every insert, rename and delete of a node,
-- whatever statement makes them (a folder's move rewrites its descendants'
-- paths, not their names; a user's deletion cascades to the nodes and fires
-- the delete trigger), so no write path can leave the index behind.
CREATE TABLE name_positions (k INTEGER PRIMARY KEY);
-- 1 … 255: a name is at most 255 bytes (vpath.MaxNameLen), so as many characters at most.
INSERT INTO name_positions(k) SELECT a.k * 16 + b.k + 1 FROM
    (SELECT 0 AS k UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7
     UNION ALL SELECT 8 UNION ALL SELECT 9 UNION ALL SELECT 10 UNION ALL SELECT 11 UNION ALL SELECT 12 UNION ALL SELECT 13 UNION ALL SELECT 14 UNION ALL SELECT 15) AS a,
    (SELECT 0 AS k UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7
     UNION ALL SELECT 8 UNION ALL SELECT 9 UNION ALL SELECT 10 UNION ALL SELECT 11 UNION ALL SELECT 12 UNION ALL SELECT 13 UNION ALL SELECT 14 UNION ALL SELECT 15) AS b
    WHERE a.k * 16 + b.k + 1 <= 255;

CREATE VIRTUAL TABLE node_names USING fts4(grams);

INSERT INTO node_names(docid, grams)
    SELECT n.id, (SELECT group_concat(hex(substr(lower(n.name) || '//', k, 3)), ' ') FROM name_positions WHERE k <= length(n.name))
    FROM nodes AS n WHERE n.name <> '';

CREATE TRIGGER node_names_insert AFTER INSERT ON nodes WHEN new.name <> '' BEGIN
    INSERT INTO node_names(docid, grams)
        SELECT new.id, group_concat(hex(substr(lower(new.name) || '//', k, 3)), ' ') FROM name_positions WHERE k <= length(new.name);
END;

CREATE TRIGGER node_names_rename AFTER UPDATE OF name ON nodes WHEN old.name IS NOT new.name BEGIN
    DELETE FROM node_names WHERE docid = old.id;
    INSERT INTO node_names(docid, grams)
        SELECT new.id, group_concat(hex(substr(lower(new.name) || '//', k, 3)), ' ') FROM name_positions WHERE k <= length(new.name);
END;

CREATE TRIGGER node_names_delete AFTER DELETE ON nodes BEGIN
    DELETE FROM node_names WHERE docid = old.id;
END;

-- The search's order, newest first: a common pattern is answered by
-- walking it and stopping at a page.
CREATE INDEX nodes_mtime ON nodes (user_id, mtime_ns, id);
