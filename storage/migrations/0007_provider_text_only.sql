-- Whether a provider's model takes images: 1 for text-only models, whose requests
-- leave images out (the agent loop tells the model an image was left out).
ALTER TABLE providers ADD COLUMN text_only INTEGER NOT NULL DEFAULT 0 CHECK (text_only IN (0, 1));
