package fetch

import (
	"testing"
	"time"
)

// TestQuietHoursBoundaries: a quiet window holds its start and not its
// end, to the nanosecond, whether it lies within a day or wraps past
// midnight, and is read in its own zone: every part of the time of day
// (hours, minutes, seconds, nanoseconds) counts.
func TestQuietHoursBoundaries(t *testing.T) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	hms := func(h, m, s, ns int) time.Duration {
		return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(ns)
	}
	at := func(h, m, s, ns int) time.Time { return time.Date(2026, 12, 3, h, m, s, ns, zone) }
	day := &QuietHours{Start: hms(9, 30, 15, 500), End: hms(17, 45, 30, 250), Location: zone}
	night := &QuietHours{Start: hms(22, 10, 5, 7), End: hms(6, 30, 20, 9), Location: zone}
	for _, c := range []struct {
		q    *QuietHours
		t    time.Time
		want bool
	}{
		{day, at(9, 30, 15, 499), false},
		{day, at(9, 30, 15, 500), true},
		{day, at(12, 0, 0, 0), true},
		{day, at(17, 45, 30, 249), true},
		{day, at(17, 45, 30, 250), false},
		{day, at(3, 0, 0, 0), false},
		{day, at(23, 59, 59, 999999999), false},
		{night, at(22, 10, 5, 6), false},
		{night, at(22, 10, 5, 7), true},
		{night, at(23, 59, 59, 999999999), true},
		{night, at(0, 0, 0, 0), true},
		{night, at(6, 30, 20, 8), true},
		{night, at(6, 30, 20, 9), false},
		{night, at(12, 0, 0, 0), false},
		// The same instants in another zone are read in the window's.
		{day, at(9, 30, 15, 500).UTC(), true},
		{day, at(17, 45, 30, 250).UTC(), false},
		{nil, at(12, 0, 0, 0), false},
	} {
		if got := c.q.contains(c.t); got != c.want {
			t.Errorf("%+v contains %v = %v, want %v", c.q, c.t, got, c.want)
		}
	}
}

// TestBodyFieldTargetSkipsArraysWhole: a key on the field's path whose
// value is an array (nested arrays and objects in it) is stepped over
// whole, so a second spelling of that key after it is still seen and the
// body refused as ambiguous, and what follows it is still read.
func TestBodyFieldTargetSkipsArraysWhole(t *testing.T) {
	for _, c := range []struct {
		body          string
		target        string
		ambiguous, ok bool
	}{
		{`{"msg":[[1,{"a":[2,{}]}],{"b":{"c":[]}}],"MSG":{"x":"t"}}`, "", true, false},
		{`{"msg":[],"Msg":{"x":"t"}}`, "", true, false},
		{`{"msg":[{}],"msg":{"x":"t"}}`, "", true, false},
		{`{"msg":{"x":"t","y":[[],[{}]]},"z":[{"msg":1}]}`, "t", false, true},
		{`{"msg":[[{"x":"t"}]]}`, "", false, false},
		{`{"msg":[[1],{"a":[2]}]} {}`, "", false, false},
	} {
		target, ambiguous, ok := BodyFieldTarget("msg.x", c.body)
		if target != c.target || ambiguous != c.ambiguous || ok != c.ok {
			t.Errorf("BodyFieldTarget(msg.x, %s) = %q, %v, %v; want %q, %v, %v", c.body, target, ambiguous, ok, c.target, c.ambiguous, c.ok)
		}
	}
}
