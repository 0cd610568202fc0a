-- The journal: executor decisions and unattended acts, metadata only (never
-- a credential, a credentialed URL or a body). id grows monotonically, so
-- newest first is ORDER BY id DESC on the rowid; retention deletes by id.
CREATE TABLE snugd_journal (
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  app_id TEXT NOT NULL,
  slot TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '',
  method TEXT NOT NULL DEFAULT '',
  outcome TEXT NOT NULL,
  gate TEXT NOT NULL DEFAULT '',
  code TEXT NOT NULL DEFAULT '',
  status INTEGER NOT NULL DEFAULT 0,
  duration_ms INTEGER NOT NULL DEFAULT 0,
  unattended INTEGER NOT NULL DEFAULT 0 CHECK (unattended IN (0, 1)),
  note TEXT NOT NULL DEFAULT ''
);

CREATE INDEX snugd_journal_app ON snugd_journal (app_id, id);
CREATE INDEX snugd_journal_unattended ON snugd_journal (id) WHERE unattended = 1;
