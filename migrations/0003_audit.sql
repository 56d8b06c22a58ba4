-- The audit trail: every security event, kept for the retention period (GATEHOUSE_AUDIT_RETENTION).
-- No foreign keys: an event outlives the session it names, and says what happened even if rows it
-- refers to are gone.
CREATE TABLE audit_events (
    id         UUID PRIMARY KEY,
    at         BIGINT NOT NULL,
    -- dotted name, e.g. login.succeeded (see README, "Audit trail")
    event      TEXT NOT NULL,
    user_id    UUID,
    session_id UUID,
    ip         TEXT,
    user_agent TEXT,
    -- short machine-readable detail, e.g. the logout scope or the rotated key's kid; never a secret
    detail     TEXT
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_user ON audit_events (user_id, at);
