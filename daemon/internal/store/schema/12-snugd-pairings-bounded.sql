-- Pairing requests under a flood (issue 25 item 8): every query of a
-- request path or a status read goes through one of these partial indexes,
-- so none reads the whole table. The pending ones per surface, oldest
-- first (the cap and the displacement); the pending ones by expiry (the
-- expiry sweep, the count of live requests); the others by age (the
-- 24-hour history, and the pruning that keeps only the newest finished
-- ones).
CREATE INDEX snugd_pairings_pending ON snugd_pairings (surface, created_at) WHERE state = 'pending';
CREATE INDEX snugd_pairings_pending_expiry ON snugd_pairings (expires_at) WHERE state = 'pending';
CREATE INDEX snugd_pairings_done ON snugd_pairings (created_at) WHERE state <> 'pending';
