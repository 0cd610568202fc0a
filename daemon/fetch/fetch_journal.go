package fetch

import (
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
)

// record queues the journal entry of one executor request.
func (e *Executor) record(f *Fetch, res NetResult) {
	if grants.CheckAppID(f.Call.AppID) != nil {
		return // no identity to file it under
	}
	entry := store.JournalEntry{
		At:       f.Start,
		AppID:    f.Call.AppID,
		Host:     f.journalHost(),
		Method:   f.Req.Method,
		Duration: e.now().Sub(f.Start),
		Status:   res.Status,
		Code:     string(res.Code),
		Note:     "",
	}
	entry.ResolvedHost = f.resolvedHost()
	if f.Grant != nil {
		entry.Slot = f.Grant.Slot
	} else if f.conn != nil {
		entry.Slot = f.conn.Slot
	}
	switch {
	case f.err != nil:
		entry.Outcome, entry.Gate = "refused", f.failedGate
		if f.resp != nil {
			entry.Outcome = "failed"
		}
	default:
		entry.Outcome = "sent"
	}
	switch f.approval {
	case "standing":
		entry.Unattended, entry.Note = true, "approved by a standing approval"
	case "session":
		entry.Note = "approved by session memory"
	case "user":
		entry.Note = "approved by the user"
	case "":
		if f.denial != "" {
			entry.Note = f.denial // who or what denied the confirm
		}
	}
	if f.Probe {
		entry.Note = "probe"
	}
	e.journal.Add(entry)
}

// journalHost is the host the journal records: the symbolic form for a
// connection URL, else the normalized host (or, when the host did not
// normalize, nothing).
func (f *Fetch) journalHost() string {
	if f.conn != nil {
		return f.conn.symbolic()
	}
	return f.Host
}

// resolvedHost is the host a connection-URL request resolved to, for the
// administrator's journal; "" for a literal URL (its host is already in
// Host) or when nothing resolved.
func (f *Fetch) resolvedHost() string {
	if f.conn != nil {
		return f.Host
	}
	return ""
}
