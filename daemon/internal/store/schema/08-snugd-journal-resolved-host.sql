-- The host a connection-URL request resolved to, for the administrator's
-- journal (host keeps the symbolic snug-connection://<slot>); '' when the
-- request named its host itself or never resolved one.
ALTER TABLE snugd_journal ADD COLUMN resolved_host TEXT NOT NULL DEFAULT '';
