-- The channel each staged change came from. Review posture follows the
-- proposer (spec §12.1), and a change the builder assistant stages on a row
-- the user typed must not be reviewed as the user's own entry; but
-- snug_connections has one provenance column, which describes
-- requirement_json, and the stager writes pending_requirement_json only
-- (§12.3). So the staged change's provenance lives here, beside the
-- pending requirement it describes: a row whose pending_json is not the
-- connection's pending column describes nothing.
CREATE TABLE snugd_staged (
  app_id TEXT NOT NULL,
  slot TEXT NOT NULL,
  pending_json TEXT NOT NULL,
  provenance TEXT NOT NULL,
  confidence REAL,
  PRIMARY KEY (app_id, slot)
);
