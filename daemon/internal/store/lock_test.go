package store

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestParseLockHolder(t *testing.T) {
	good := LockHolder{PID: 4242, Started: time.Date(2026, 5, 1, 10, 0, 0, 123000000, time.UTC)}
	tests := []struct {
		in      string
		want    LockHolder
		wantErr bool
	}{
		{"pid=4242 started=2026-05-01T10:00:00.123Z\n", good, false},
		{"pid=1 started=2026-05-01T10:00:00.123Z\n", LockHolder{PID: 1, Started: good.Started}, false},
		{"pid=4242 started=2026-05-01T10:00:00.123Z", LockHolder{}, true},    // no newline
		{"pid=04242 started=2026-05-01T10:00:00.123Z\n", LockHolder{}, true}, // leading zero
		{"pid=0 started=2026-05-01T10:00:00.123Z\n", LockHolder{}, true},
		{"pid=-1 started=2026-05-01T10:00:00.123Z\n", LockHolder{}, true},
		{"pid=+1 started=2026-05-01T10:00:00.123Z\n", LockHolder{}, true},
		{"pid=99999999999 started=2026-05-01T10:00:00.123Z\n", LockHolder{}, true},
		{"pid=4294967296 started=2026-05-01T10:00:00.123Z\n", LockHolder{}, true},
		{"pid= started=2026-05-01T10:00:00.123Z\n", LockHolder{}, true},
		{"pid=4242  started=2026-05-01T10:00:00.123Z\n", LockHolder{}, true},
		{"pid=4242 started=2026-05-01T10:00:00Z\n", LockHolder{}, true},
		{"pid=4242 started=2026-05-01T12:00:00.123+02:00\n", LockHolder{}, true},
		{"pid=4242 started=2026-05-01T10:00:00.123Z\n\n", LockHolder{}, true},
		{"pid=4242 started=2026-05-01T10:00:00.123Z trailing\n", LockHolder{}, true},
		{"PID=4242 started=2026-05-01T10:00:00.123Z\n", LockHolder{}, true},
		{"", LockHolder{}, true},
		{"pid=4242 started=" + strings.Repeat("9", 200) + "\n", LockHolder{}, true},
	}
	for _, tc := range tests {
		got, err := parseLockHolder([]byte(tc.in))
		if (err != nil) != tc.wantErr || got.PID != tc.want.PID || !got.Started.Equal(tc.want.Started) {
			t.Errorf("parseLockHolder(%q) = %+v, %v, want %+v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// FuzzParseLockHolder: the parser never panics, accepts only the canonical
// record (what it accepts prints back to the same bytes), and reads back
// everything the formatter writes.
func FuzzParseLockHolder(f *testing.F) {
	f.Add([]byte("pid=4242 started=2026-05-01T10:00:00.123Z\n"), 4242, int64(0))
	f.Add([]byte("pid=1 started=0001-01-01T00:00:00.000Z\n"), 1, int64(-62135596800000))
	f.Add([]byte("pid=2147483647 started=9999-12-31T23:59:59.999Z\n"), 2147483647, int64(253402300799999))
	f.Add([]byte("pid=12 started=2026-02-30T10:00:00.000Z\n"), 12, int64(1))
	f.Fuzz(func(t *testing.T, b []byte, pid int, unixMilli int64) {
		h, err := parseLockHolder(b)
		if err == nil {
			if h.PID <= 0 {
				t.Fatalf("parseLockHolder(%q) accepted pid %d", b, h.PID)
			}
			if back := formatLockHolder(h); !bytes.Equal(back, b) {
				t.Fatalf("parseLockHolder(%q) = %+v, which formats as %q", b, h, back)
			}
		}
		if pid <= 0 || pid > 1<<31-1 {
			return
		}
		started := time.UnixMilli(unixMilli).UTC()
		if y := started.Year(); y < 1 || y > 9999 {
			return
		}
		want := LockHolder{PID: pid, Started: started}
		got, err := parseLockHolder(formatLockHolder(want))
		if err != nil || got.PID != want.PID || !got.Started.Equal(want.Started) {
			t.Fatalf("parseLockHolder(formatLockHolder(%+v)) = %+v, %v", want, got, err)
		}
	})
}
