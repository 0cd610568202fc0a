-- snugd's own bookkeeping: the migration counter of the snugd_* tables
-- (key 'schema_version'; never PRAGMA user_version, which belongs to Part II)
-- and the master-key check value (key 'key_check').
CREATE TABLE snugd_meta (
  key TEXT PRIMARY KEY,
  value BLOB NOT NULL
);
