-- weights, when set, spread a route's requests over its upstreams (the primary
-- and its fallbacks, in that order) in these proportions, as comma-separated
-- whole numbers; empty keeps the order: the primary first, the fallbacks after.
ALTER TABLE routes ADD COLUMN weights TEXT NOT NULL DEFAULT '';
