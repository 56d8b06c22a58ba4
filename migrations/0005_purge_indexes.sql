-- Indexes for housekeeping at scale. Each purge deletes in small batches chosen by a LIMITed
-- subquery (SQLite holds its one writer for a batch at a time, not for the whole purge); without an
-- index on the column it filters on, every batch would scan the table from the start, so purging a
-- million rows would read the table a thousand times.

-- lapsed sessions (refreshing moves `expires_at`, so every refresh also moves this index's entry:
-- one more B-tree page written, the price of finding lapsed sessions without a scan)
CREATE INDEX sessions_expires ON sessions (expires_at);

-- consumed refresh-token records, kept only a minute past the reuse grace window; the unconsumed
-- one of each session (the bulk of the table) is not in the index
CREATE INDEX refresh_tokens_consumed ON refresh_tokens (consumed_at) WHERE consumed_at IS NOT NULL;

-- expired 2FA challenges
CREATE INDEX temp_tokens_expires ON temp_tokens (expires_at);
