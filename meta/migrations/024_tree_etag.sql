-- A folder's tree_seq changes whenever anything at any depth below it is
-- created, changed, moved or removed: sync clients compare a folder's ETag
-- (which includes it) to decide whether to walk it, so an unchanged root
-- means nothing to fetch. Triggers keep it in the same transaction as the
-- change, whatever statement made it: each changed row bumps its parent,
-- and each bump bumps the next parent up to the root (recursive triggers:
-- the store opens SQLite with recursive_triggers on). Trashed entries
-- (parent '#…') bump only inside the trash.
ALTER TABLE nodes ADD COLUMN tree_seq INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER nodes_tree_insert AFTER INSERT ON nodes BEGIN
    UPDATE nodes SET tree_seq = tree_seq + 1 WHERE user_id = NEW.user_id AND path = NEW.parent AND is_dir = 1;
END;

CREATE TRIGGER nodes_tree_delete AFTER DELETE ON nodes BEGIN
    UPDATE nodes SET tree_seq = tree_seq + 1 WHERE user_id = OLD.user_id AND path = OLD.parent AND is_dir = 1;
END;

CREATE TRIGGER nodes_tree_change AFTER UPDATE OF path, size, mode, mtime_ns, file_hash, link_target ON nodes BEGIN
    UPDATE nodes SET tree_seq = tree_seq + 1 WHERE user_id = NEW.user_id AND path IN (NEW.parent, OLD.parent) AND is_dir = 1;
END;

CREATE TRIGGER nodes_tree_up AFTER UPDATE OF tree_seq ON nodes WHEN NEW.parent <> '' BEGIN
    UPDATE nodes SET tree_seq = tree_seq + 1 WHERE user_id = NEW.user_id AND path = NEW.parent AND is_dir = 1;
END;

-- Listings read tree_seq with the other columns: the covering index holds
-- it too.
DROP INDEX nodes_children;
CREATE INDEX nodes_children ON nodes (user_id, parent, name, id, path, is_dir, size, mode, mtime_ns, file_hash, content_md5, content_sha1, link_target, tree_seq);
