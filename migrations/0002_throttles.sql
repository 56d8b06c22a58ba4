-- Login throttling per account, shared by every instance. One row per key (an account's
-- normalised e-mail, known or not, so that throttling tells nothing about which accounts exist)
-- holding its GCRA "theoretical arrival time": each failure moves it one emission interval later;
-- a key whose `tat` lies more than the burst ahead of now is throttled. Rows whose `tat` has
-- passed carry no state and are deleted by housekeeping.
CREATE TABLE throttles (
    key TEXT PRIMARY KEY,
    tat BIGINT NOT NULL
);
CREATE INDEX throttles_tat ON throttles (tat);
