package emulator

import (
	"strconv"
	"strings"

	"better-compute.io/compute/pkg/sshemu"
)

// reset applies a reset of type kind to srv (callers hold mu):
//   - sw, hw: the server reboots (Guess: sw reboots a running Linux
//     cleanly and so behaves as hw here);
//   - power: an off server powers on and boots; a running one gets an
//     ACPI shutdown and is off (Guess: its OS honours it at once);
//   - power_long: off, hard;
//   - man: a technician's power cycle, which reboots as hw (Guess: at
//     once; the real one takes a while).
func (e *Emulator) reset(srv *server, kind string) {
	switch kind {
	case "power":
		if srv.powered {
			e.leave(srv)
			srv.powered, srv.booted = false, sysNone
			return
		}
	case "power_long":
		e.leave(srv)
		srv.powered, srv.booted = false, sysNone
		return
	}
	e.leave(srv)
	srv.powered = true
	e.boot(srv)
	srv.upAt = e.now().Add(e.opts.BootDelay)
}

// leave ends the running system: a rescue boot's installimage runs decide
// what the disks hold (the last run's exit: 0 installs the system it
// named with -n, anything else leaves the disks broken; no run leaves
// them as they were).
func (e *Emulator) leave(srv *server) {
	if srv.booted != sysRescue || e.ssh == nil {
		return
	}
	m := e.ssh.Machine(rescueID(srv.spec.Number))
	if m == nil {
		return
	}
	runs := m.Runs()
	var last *sshemu.Run
	for i := srv.rescueRuns; i < len(runs); i++ {
		if strings.Contains(runs[i].Command+"\n"+runs[i].Script, "installimage") {
			last = &runs[i]
		}
	}
	srv.rescueRuns = len(runs)
	if last == nil {
		return
	}
	if last.Exit != 0 {
		srv.disk = diskBroken
		return
	}
	srv.disk, srv.hostname = diskOS, installHostname(last.Command+"\n"+last.Script)
	if os := e.ssh.Machine(strconv.Itoa(srv.spec.Number)); os != nil {
		if err := os.ChangeHostKey(); err != nil { // installimage -G yes (its default): new host keys
			e.log.Warn().Err(err).Int("server", srv.spec.Number).Msg("robot emulator: host key")
		}
		os.SetProgram("hostname", sshemu.Response{Stdout: srv.hostname + "\n"})
	}
}

// installHostname is the -n value of the installimage command line in
// text, or installimage's default "Ubuntu" (Guess).
func installHostname(text string) string {
	for _, line := range strings.Split(text, "\n") {
		w := strings.Fields(line)
		if len(w) == 0 || !strings.HasSuffix(w[0], "installimage") {
			continue
		}
		for i := 1; i+1 < len(w); i++ {
			if w[i] == "-n" {
				return w[i+1]
			}
		}
	}
	return "Ubuntu"
}

// boot starts the system srv boots now: the armed rescue (used up, as on
// the real API) or the disks.
func (e *Emulator) boot(srv *server) {
	if srv.rescue == nil {
		srv.booted = sysDisk
		return
	}
	srv.rescue, srv.booted = nil, sysRescue
	if e.ssh == nil {
		return
	}
	m := e.ssh.Machine(rescueID(srv.spec.Number))
	if m == nil {
		return
	}
	// Guess: the rescue system makes new host keys at every boot (the
	// API's host_key list of an activation is empty in the docs' examples).
	if err := m.ChangeHostKey(); err != nil {
		e.log.Warn().Err(err).Int("server", srv.spec.Number).Msg("robot emulator: host key")
	}
	m.SetProgram("hostname", sshemu.Response{Stdout: "rescue\n"})
	srv.rescueRuns = len(m.Runs())
	e.armInstallImage(srv)
}

// InstallImagePath is installimage in the rescue system; its interactive
// shell's "installimage" is an alias of it (both answer here).
const InstallImagePath = "/root/.oldroot/nfs/install/installimage"

// armInstallImage registers installimage on srv's rescue machine as its
// install mode says.
func (e *Emulator) armInstallImage(srv *server) {
	if e.ssh == nil {
		return
	}
	m := e.ssh.Machine(rescueID(srv.spec.Number))
	if m == nil {
		return
	}
	r := sshemu.Response{Stdout: "Hetzner Online GmbH - installimage\nINSTALLATION COMPLETE\n"}
	switch srv.install {
	case InstallFail:
		r = sshemu.Response{Stdout: "Hetzner Online GmbH - installimage\n", Stderr: "ERROR: formatting partitions failed\n", Exit: 1}
	case InstallHang:
		r = sshemu.Response{Stdout: "Hetzner Online GmbH - installimage\n", Hang: true}
	}
	for _, name := range []string{"installimage", InstallImagePath} {
		m.SetProgram(name, r)
	}
}
