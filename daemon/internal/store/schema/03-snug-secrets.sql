-- Spec Part III §13: credential values, keyed auth:<appId>:<slot>:<fieldKey>,
-- auth:<appId>:<slot>:_connection, auth:_flow:<flowId>, auth:_state_hmac.
-- value is sealed (see doc.go); updated_at is the store's timestamp format.
CREATE TABLE snug_secrets (key TEXT PRIMARY KEY, value BLOB NOT NULL, updated_at TEXT NOT NULL);
