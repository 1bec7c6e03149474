-- The tree_seq trigger skips rows while a statement over a whole subtree
-- runs (meta/migrations/028_tree_bulk.sql says why): meta's bulk helper
-- holds the row of tree_bulk for its duration, in the same transaction, so
-- no other transaction sees it. A trigger's WHEN cannot hold a subquery in
-- PostgreSQL, so the function checks it first.
CREATE TABLE tree_bulk (active INTEGER PRIMARY KEY CHECK (active = 1));

CREATE OR REPLACE FUNCTION nodes_tree_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND EXISTS (SELECT 1 FROM tree_bulk) THEN
        RETURN NULL;
    END IF;
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
