package fetch

import (
	"context"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/wire"
)

// record commits the journal entry of one executor request, before it is
// answered: a new row, or the completion of the row gate 6b wrote before
// the send. An error means the entry is not on disk (the journal cannot
// be written): the caller must not give the answer.
func (e *Executor) record(f *Fetch, res NetResult) error {
	if grants.CheckAppID(f.Call.AppID) != nil {
		return nil // no identity to file it under
	}
	entry := e.entry(f, res)
	if f.journalID > 0 {
		return e.journal.Complete(f.journalID, entry)
	}
	_, err := e.journal.Commit(entry)
	return err
}

// Gate 6b: journal. A request that changes things (POST, PUT, PATCH,
// DELETE, once gate 6 allowed it) is journaled before it is sent: its row
// (outcome store.OutcomeSentUnknown) commits here and is completed with
// the outcome after the send, so a crash in between leaves "sent, outcome
// unknown", never a send without a row. A request whose row cannot be
// committed is refused here, before any credential is read, and nothing
// is sent. While the journal cannot be written (a full or read-only
// disk), every request writes its row here first, a GET too: that write
// is the probe that finds the disk writable again, and a request it
// cannot record is never sent.
func (e *Executor) journalSend(_ context.Context, f *Fetch) *errcode.Error {
	if !mutating(f.Req.Method) && e.journal.Writable() {
		return nil // recorded after the answer, before it leaves (record)
	}
	pre := e.entry(f, NetResult{})
	pre.Outcome, pre.Duration = store.OutcomeSentUnknown, 0
	id, err := e.journal.Commit(pre)
	if err != nil {
		return journal.Refusal(err)
	}
	f.journalID = id
	return nil
}

// unrecorded is the answer of a request whose journal entry could not be
// committed: the refusal that says why, instead of what it would have
// answered (an answer never leaves without its row).
func (e *Executor) unrecorded(f *Fetch, err error) NetResult {
	refusal := journal.Refusal(err)
	if f.parseErr != nil || f.Req.RequestID == "" {
		return NetResult{Code: refusal.Code} // no requestId: nothing is answered
	}
	b, encErr := wire.Encode(wire.NetErrorResponse(f.Req.RequestID, f.Req.URL, errcode.New(refusal.Code, refusal.Msg)))
	if encErr != nil {
		e.log.Error("encode net error answer", "code", string(refusal.Code), "err", encErr)
		return NetResult{Code: refusal.Code}
	}
	return NetResult{Frame: b, Answer: true, Code: refusal.Code}
}

// entry is the journal entry of f's outcome, res its answer.
func (e *Executor) entry(f *Fetch, res NetResult) store.JournalEntry {
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
	return entry
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
