-- The quota counts every byte the workspace keeps: earlier versions are full copies,
-- and a history that grows unseen beside a quota is no quota at all. Their total is
-- kept beside the files' total by the same kind of triggers, in the transaction of
-- the change that moves it (a file's delete cascades to its versions and fires
-- workspace_version_usage_delete for each).
ALTER TABLE workspace_usage ADD COLUMN version_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE workspace_usage SET version_bytes = (SELECT COALESCE(SUM(size), 0) FROM workspace_file_versions) WHERE id = 1;

CREATE TRIGGER workspace_version_usage_insert AFTER INSERT ON workspace_file_versions BEGIN
    UPDATE workspace_usage SET version_bytes = version_bytes + NEW.size WHERE id = 1;
END;
CREATE TRIGGER workspace_version_usage_delete AFTER DELETE ON workspace_file_versions BEGIN
    UPDATE workspace_usage SET version_bytes = version_bytes - OLD.size WHERE id = 1;
END;

-- Pruning takes the oldest replaced content first, across the workspace.
CREATE INDEX workspace_file_versions_replaced ON workspace_file_versions(replaced_at, id);
