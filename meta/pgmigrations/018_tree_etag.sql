-- A folder's tree_seq changes whenever anything at any depth below it is
-- created, changed, moved or removed (meta/migrations/024_tree_etag.sql
-- says why). The trigger bumps the changed row's parent; the bump's own
-- update fires it again for the next parent, up to the root.
ALTER TABLE nodes ADD COLUMN tree_seq BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION nodes_tree_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE nodes SET tree_seq = tree_seq + 1 WHERE user_id = OLD.user_id AND path = OLD.parent AND is_dir = 1;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.parent <> NEW.parent THEN
        UPDATE nodes SET tree_seq = tree_seq + 1 WHERE user_id = OLD.user_id AND path = OLD.parent AND is_dir = 1;
    END IF;
    IF NEW.parent <> '' THEN
        UPDATE nodes SET tree_seq = tree_seq + 1 WHERE user_id = NEW.user_id AND path = NEW.parent AND is_dir = 1;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER nodes_tree_insert AFTER INSERT ON nodes FOR EACH ROW EXECUTE FUNCTION nodes_tree_bump();
CREATE TRIGGER nodes_tree_delete AFTER DELETE ON nodes FOR EACH ROW EXECUTE FUNCTION nodes_tree_bump();
CREATE TRIGGER nodes_tree_change AFTER UPDATE OF path, size, mode, mtime_ns, file_hash, link_target, tree_seq ON nodes
    FOR EACH ROW EXECUTE FUNCTION nodes_tree_bump();

DROP INDEX nodes_children;
CREATE INDEX nodes_children ON nodes (user_id, parent, name) INCLUDE (id, path, is_dir, size, mode, mtime_ns, file_hash, content_md5, content_sha1, link_target, tree_seq);
