//go:build !unix

package linkdevice

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func killTree(p *os.Process) {
	if p != nil {
		p.Kill()
	}
}

func killGroup(*os.Process) {}
