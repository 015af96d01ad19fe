-- Money: a price per upstream model, what each request cost, and budgets in the
-- price table's currency. Amounts are BIGINT millionths of the currency unit
-- (micros); prices are micros per million tokens, so that a request's cost is an
-- integer product in either engine.
CREATE TABLE prices (
	model      TEXT PRIMARY KEY,
	input      BIGINT NOT NULL,
	output     BIGINT NOT NULL,
	cached     BIGINT NOT NULL,
	reasoning  BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);

ALTER TABLE requests ADD COLUMN cost_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily ADD COLUMN cost_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN daily_budget BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN monthly_budget BIGINT NOT NULL DEFAULT 0;
ALTER TABLE teams ADD COLUMN daily_budget BIGINT NOT NULL DEFAULT 0;
ALTER TABLE teams ADD COLUMN monthly_budget BIGINT NOT NULL DEFAULT 0;
