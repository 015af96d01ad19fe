-- The audit log is read by who made the calls too (`ferry audit --caller`, the options
-- page's filter): a handful of callers, each wanting its newest rows first.
CREATE INDEX audit_log_caller ON audit_log(caller, time);
