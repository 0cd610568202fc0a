//go:build !linux

package linkdevice

// becomeSubreaper does nothing: only Linux has child subreapers.
func becomeSubreaper() error { return nil }

// sweepOrphans does nothing: no orphan is reparented to snugd here.
func (s *Supervisor) sweepOrphans() {}
