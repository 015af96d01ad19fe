-- Request options of a provider that its vendor's API needs and detection cannot
-- always know ('auto': detected from the base URL and the model): whether to send
-- stream_options, which length field to send, the classic Azure api-version, whether
-- to send each turn's reasoning back (DeepSeek), whether to mark prompt-cache
-- breakpoints (Anthropic).
ALTER TABLE providers ADD COLUMN stream_usage TEXT NOT NULL DEFAULT 'auto' CHECK (stream_usage IN ('auto', 'on', 'off'));
ALTER TABLE providers ADD COLUMN max_tokens_field TEXT NOT NULL DEFAULT 'auto'
    CHECK (max_tokens_field IN ('auto', 'max_tokens', 'max_completion_tokens'));
ALTER TABLE providers ADD COLUMN api_version TEXT NOT NULL DEFAULT '';
ALTER TABLE providers ADD COLUMN send_reasoning TEXT NOT NULL DEFAULT 'auto' CHECK (send_reasoning IN ('auto', 'on', 'off'));
ALTER TABLE providers ADD COLUMN prompt_cache TEXT NOT NULL DEFAULT 'auto' CHECK (prompt_cache IN ('auto', 'on', 'off'));

-- An assistant turn's reasoning (JSON: text, signature, redacted), kept because some
-- vendors require it back with the turn; '' when there was none.
ALTER TABLE messages ADD COLUMN reasoning TEXT NOT NULL DEFAULT '';

-- Usage as billed: the parts of the prompt read from and written to the vendor's
-- prompt cache (included in input_tokens) and the reasoning part of the output
-- (included in output_tokens); why a model call stopped.
ALTER TABLE model_calls ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_calls ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_calls ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_calls ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
