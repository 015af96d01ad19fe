-- Each content of a workspace file keeps who wrote it and what its writer's context
-- held (the host's data-flow labels, as JSON: tools.Taint), so that reading it in any
-- conversation brings those labels back. '' is content written before labels were
-- kept: its writer is unknown.
ALTER TABLE workspace_files ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
ALTER TABLE workspace_file_versions ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
