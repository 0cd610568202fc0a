//go:build linux

package linkdevice

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes this process the child subreaper of every
// process it starts (PR_SET_CHILD_SUBREAPER): a descendant whose parent
// dies is reparented here, not to init, so the Supervisor can end it.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// sweepOrphans ends the orphans reparented to this process: in snugd,
// which starts no child but helpers, every child that is not a live
// helper process of this Supervisor came from a helper session whose
// own parent died. It cannot tell which session an orphan left, so it
// kills every one, SIGKILL round after round (an orphan's children come
// here when it dies), and reaps each by its own pid, never with
// wait(-1), which would take a live helper's exit from its Wait. It does
// nothing unless Config.ReapOrphans made this process a subreaper, so a
// program that did not ask for it keeps its own children.
func (s *Supervisor) sweepOrphans() {
	if !s.cfg.ReapOrphans {
		return
	}
	s.procMu.Lock()
	defer s.procMu.Unlock()
	self := os.Getpid()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var orphans []int
		for _, pid := range childrenOf(self) {
			if _, ok := s.pids.Load(pid); !ok {
				orphans = append(orphans, pid)
			}
		}
		if len(orphans) == 0 {
			return
		}
		for _, pid := range orphans {
			unix.Kill(pid, unix.SIGKILL)
		}
		for _, pid := range orphans {
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
		s.log.Warn("ended processes a helper session left behind", "processes", len(orphans))
	}
}
