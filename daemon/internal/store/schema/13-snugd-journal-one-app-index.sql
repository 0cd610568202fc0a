-- One index per app fewer on the journal, one page fewer written with
-- every row: (app_id, user_act, id), retention's, serves an app's page
-- too (a class's newest first along it, or both classes merged when the
-- page takes both), so (app_id, id) goes.
DROP INDEX snugd_journal_app;
