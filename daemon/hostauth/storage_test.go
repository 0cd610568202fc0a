package hostauth

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/internal/store"
)

// TestInternalStorageFull: a failure the store marks as a full or
// read-only disk answers STORAGE_FULL with a fixed sentence, any other
// INTERNAL; neither answer carries the cause, which only the log gets.
func TestInternalStorageFull(t *testing.T) {
	bk, _, logs := newBook(t)
	cause := fmt.Errorf("insert pairing %q: %w: database or disk is full", "p_secretish", store.ErrStorageFull)
	err := bk.internal("record pairing", cause)
	if code, _ := errcode.CodeOf(err); code != errcode.StorageFull {
		t.Fatalf("internal(full disk) = %v, want STORAGE_FULL", err)
	}
	var ce *errcode.Error
	if !errors.As(err, &ce) || ce.Msg != "the disk holding snugd's data is full; nothing was changed" {
		t.Errorf("internal(full disk) message = %q", ce.Msg)
	}
	if strings.Contains(err.Error(), "p_secretish") {
		t.Errorf("internal(full disk) = %q, which carries the cause", err)
	}
	if !strings.Contains(logs.String(), "p_secretish") {
		t.Errorf("the cause was not logged: %s", logs.String())
	}
	err = bk.internal("record pairing", errors.New("constraint failed"))
	if code, _ := errcode.CodeOf(err); code != errcode.Internal {
		t.Errorf("internal(other) = %v, want INTERNAL", err)
	}
}
