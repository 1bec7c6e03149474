-- A statement that rewrites or deletes every row of a subtree (a folder's
-- move, its trip to and from the trash, a purge) fired the tree_seq
-- triggers once per row, and every bump climbed to the root: the cost of a
-- folder move grew with its size times its depth. Such a statement leaves
-- the subtree's top for a statement of its own, which bumps the old and new
-- parent chains, and the entries below keep their ids and their own
-- tree_seq, so the per-row bumps only repeat work. meta's bulk helper
-- (treeBulk, meta/treebulk.go) holds the row of tree_bulk for the duration
-- of such a statement, in the same transaction, and the triggers skip rows
-- while it is there. A main-schema table, because SQLite triggers in the
-- main schema cannot see temporary ones.
CREATE TABLE tree_bulk (active INTEGER PRIMARY KEY CHECK (active = 1));

DROP TRIGGER nodes_tree_delete;
CREATE TRIGGER nodes_tree_delete AFTER DELETE ON nodes WHEN NOT EXISTS (SELECT 1 FROM tree_bulk) BEGIN
    UPDATE nodes SET tree_seq = tree_seq + 1 WHERE user_id = OLD.user_id AND path = OLD.parent AND is_dir = 1;
END;

DROP TRIGGER nodes_tree_change;
CREATE TRIGGER nodes_tree_change AFTER UPDATE OF path, size, mode, mtime_ns, file_hash, link_target ON nodes WHEN NOT EXISTS (SELECT 1 FROM tree_bulk) BEGIN
    UPDATE nodes SET tree_seq = tree_seq + 1 WHERE user_id = NEW.user_id AND path IN (NEW.parent, OLD.parent) AND is_dir = 1;
END;
