-- Items by where they were: a folder's delete takes back the items deleted
-- from under it moments before (meta/trash.go foldTx), and a restore by
-- path finds the newest item deleted there, each one range of this index
-- rather than a walk over the user's whole trash.
CREATE INDEX trash_items_path ON trash_items (user_id, path);
