-- Delivered events are kept seven days, then the relay removes them
-- (components/billing/src/outbox.rs, OUTBOX_RETENTION): this index finds
-- the longest delivered without reading the pending ones.
CREATE INDEX outbox_events_delivered ON outbox_events (delivered_at) WHERE delivered_at IS NOT NULL;
