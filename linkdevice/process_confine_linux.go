//go:build linux

package linkdevice

import (
	"fmt"
	"os"
	"slices"
	"time"
)

// reportTimeout bounds how long Start waits for stage two's report.
const reportTimeout = 10 * time.Second

// startConfined starts cmd through its confining command (RunConfine):
// the command's first stage is the session's subreaper and holds the
// lifeline; its second narrows itself and execs the helper. Start returns
// once the helper runs, with the confinement reached, or fails when the
// confinement could not be set up: a helper is never started less
// confined than the kernel allows.
func startConfined(cmd Command) (Process, error) {
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		closeAll(lifeR, lifeW)
		return nil, fmt.Errorf("pipe: %w", err)
	}
	a := confineArgs{session: cmd.Dir, state: cmd.StateDir, connectTCP: cmd.ConnectTCP, exe: cmd.Path, args: cmd.Args}
	args := append(slices.Clone(cmd.Confine[1:]), a.argv()...)
	_, p, err := startWith(cmd.Confine[0], args, cmd, []*os.File{lifeR, repW})
	closeAll(lifeR, repW) // the child's ends
	if err != nil {
		closeAll(lifeW, repR)
		return nil, err
	}
	p.lifeline = lifeW
	rep, err := readReport(repR, reportTimeout)
	repR.Close()
	if err != nil {
		p.Kill()
		p.Wait()
		p.Close()
		return nil, err
	}
	p.conf = fromABI(rep.Landlock)
	if rep.Landlock == 0 {
		p.conf = Confinement{NoNewPrivs: true, Descendants: true}
	}
	return p, nil
}
