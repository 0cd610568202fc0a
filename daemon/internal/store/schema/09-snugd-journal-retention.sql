-- Journal retention per app (issue 10 item 8, issue 15 P1): one app's
-- flood cannot push out another app's entries, and user acts are kept
-- apart from executor entries.
--
-- user_act is 1 for a person's act (approve, revoke, credentials set, a
-- confirm decision, host pair/unpair, an import; outcome 'act'), 0 for
-- everything else (executor decisions, standing approvals' acts). Each
-- (app_id, user_act) keeps its newest entries; act names the act.
-- count and last_at aggregate repeated executor refusals into one entry:
-- count how many, last_at the latest ('' while count is 1).
ALTER TABLE snugd_journal ADD COLUMN user_act INTEGER NOT NULL DEFAULT 0 CHECK (user_act IN (0, 1));
ALTER TABLE snugd_journal ADD COLUMN act TEXT NOT NULL DEFAULT '';
ALTER TABLE snugd_journal ADD COLUMN count INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1);
ALTER TABLE snugd_journal ADD COLUMN last_at TEXT NOT NULL DEFAULT '';

-- Retention deletes a class's oldest entries along this index, named in
-- the statement (INDEXED BY) so no planner statistics can turn it into a
-- scan.
CREATE INDEX snugd_journal_retain ON snugd_journal (app_id, user_act, id);

-- How many entries each (app_id, user_act) holds, kept in step with every
-- insert and delete, so retention never counts rows. The index on n
-- finds the fattest class when the global cap is reached: the app that
-- floods pays, not its neighbours.
CREATE TABLE snugd_journal_counts (
  app_id TEXT NOT NULL,
  user_act INTEGER NOT NULL CHECK (user_act IN (0, 1)),
  n INTEGER NOT NULL CHECK (n >= 0),
  PRIMARY KEY (app_id, user_act)
) WITHOUT ROWID;
CREATE INDEX snugd_journal_counts_n ON snugd_journal_counts (n);

INSERT INTO snugd_journal_counts (app_id, user_act, n)
  SELECT app_id, 0, count(*) FROM snugd_journal GROUP BY app_id;

-- The journal's size in one row, for the global cap.
CREATE TABLE snugd_journal_size (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  n INTEGER NOT NULL CHECK (n >= 0)
);
INSERT INTO snugd_journal_size (id, n) SELECT 1, count(*) FROM snugd_journal;
