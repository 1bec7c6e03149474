-- What a trash item's nodes were charged when they left (their entries and
-- properties: meta/charge.go), so that restoring the item, and sizing the
-- quota hold before it, read one row rather than walk the subtree (three
-- passes over a 100,000-file folder otherwise). NULL for items trashed
-- before this column: a restore of one of those measures it by walking.
ALTER TABLE trash_items ADD COLUMN charge BIGINT;
