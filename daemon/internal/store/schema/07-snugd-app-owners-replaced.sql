-- Which paired host owns an app (issue 10: hosts own their apps). An app
-- belongs to the host that first wrote a row for it; unpairing that host
-- clears host_id (the app is then the administrator's: the ctl channel
-- only, until it is shared). An app with rows and no record here (rows
-- from before this table, from the ctl channel or from an import) is the
-- administrator's too.
CREATE TABLE snugd_app_owners (
  app_id TEXT PRIMARY KEY,
  host_id TEXT REFERENCES snugd_hosts (id) ON DELETE SET NULL,
  claimed_at TEXT NOT NULL
);

-- The other hosts the administrator gave an app to (snugd ctl apps share).
-- Unpairing a host drops its shares.
CREATE TABLE snugd_app_shares (
  app_id TEXT NOT NULL,
  host_id TEXT NOT NULL REFERENCES snugd_hosts (id) ON DELETE CASCADE,
  shared_at TEXT NOT NULL,
  PRIMARY KEY (app_id, host_id)
);

-- The local row an imported row replaced (spec §12.4), kept so that the
-- imported row's review shows the field-by-field diff against the grant it
-- replaced, and says truthfully whether that row was approved here. It
-- describes the row only while the row is still the imported one: any
-- later write of the slot forgets it.
CREATE TABLE snugd_replaced (
  app_id TEXT NOT NULL,
  slot TEXT NOT NULL,
  requirement_json TEXT NOT NULL,
  requirement_version INTEGER NOT NULL,
  status TEXT NOT NULL,
  allowed_hosts TEXT NOT NULL,
  approved_at TEXT,
  credentials_cleared INTEGER NOT NULL DEFAULT 0,
  replaced_at TEXT NOT NULL,
  PRIMARY KEY (app_id, slot)
);

-- Apps from before this table: with exactly one paired host there is
-- only one host they can be from, so they stay its own. With several, no
-- one can say which; they are the administrator's until shared.
INSERT INTO snugd_app_owners (app_id, host_id, claimed_at)
SELECT DISTINCT c.app_id, h.id, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM snug_connections AS c, snugd_hosts AS h
WHERE (SELECT count(*) FROM snugd_hosts) = 1;
