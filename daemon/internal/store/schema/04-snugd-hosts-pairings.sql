-- Paired hosts (DESIGN.md, loopback API security). token_hash is the SHA-256
-- of the host token; the token itself is never stored.
CREATE TABLE snugd_hosts (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  surface TEXT NOT NULL CHECK (surface IN ('web', 'desktop')),
  origin TEXT NOT NULL DEFAULT '',
  token_hash BLOB NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  last_seen_at TEXT
);

-- Pending and finished pairing requests. A code is unique among pending
-- requests only: it is what the user types to approve one.
CREATE TABLE snugd_pairings (
  id TEXT PRIMARY KEY,
  code TEXT NOT NULL,
  challenge TEXT NOT NULL,
  name TEXT NOT NULL,
  surface TEXT NOT NULL CHECK (surface IN ('web', 'desktop')),
  origin TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'expired', 'redeemed')),
  host_id TEXT REFERENCES snugd_hosts (id) ON DELETE SET NULL,
  expires_at TEXT NOT NULL,
  created_at TEXT NOT NULL
);

CREATE UNIQUE INDEX snugd_pairings_pending_code ON snugd_pairings (code) WHERE state = 'pending';
