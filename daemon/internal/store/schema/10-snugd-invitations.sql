-- Pairing invitations (issue 10 item 6): the administrator mints one on
-- the ctl channel (snugd ctl hosts invite NAME) for one desktop host, which
-- pairs with it in a lane of its own that no flood of pairing requests
-- reaches. hash is the SHA-256 of the invitation; the invitation itself is
-- never stored. An invitation is live while used_at is NULL and expires_at
-- is ahead; pairing_id is the pairing it was used for.
CREATE TABLE snugd_invitations (
  id TEXT PRIMARY KEY,
  hash BLOB NOT NULL UNIQUE,
  name TEXT NOT NULL,
  surface TEXT NOT NULL CHECK (surface IN ('web', 'desktop')),
  expires_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  used_at TEXT,
  pairing_id TEXT REFERENCES snugd_pairings (id) ON DELETE SET NULL
);

-- invited is 1 for a pairing recorded with an invitation: approved by the
-- administrator when it was recorded, never counted against the cap of
-- waiting requests, never displaced.
ALTER TABLE snugd_pairings ADD COLUMN invited INTEGER NOT NULL DEFAULT 0 CHECK (invited IN (0, 1));
