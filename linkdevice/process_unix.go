//go:build unix

package linkdevice

import (
	"os"
	"syscall"
)

// sysProcAttr puts a helper in its own process group, so a terminal's
// Ctrl-C reaches snugd (which shuts helpers down in order) and Kill takes
// the helper's own children with it.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func killTree(p *os.Process) {
	if p == nil {
		return
	}
	syscall.Kill(-p.Pid, syscall.SIGKILL)
	p.Kill()
}

// killGroup kills the members left in p's process group after p exited.
func killGroup(p *os.Process) {
	if p != nil {
		syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}
