package emulator

import "strconv"

// startSSH gives v an SSH endpoint when the emulator has an SSH fleet
// (Options.SSH). Callers hold e.mu.
func (e *Emulator) startSSH(v *vm) {
	if e.opts.SSH == nil || v.sshPort != 0 {
		return
	}
	m, err := e.opts.SSH.Start(strconv.Itoa(v.id))
	if err != nil {
		return // the VM has no endpoint: access to it fails, as to a VM without sshd
	}
	v.sshPort = m.Port()
}

// stopSSH ends v's SSH endpoint, if it has one. Callers hold e.mu.
func (e *Emulator) stopSSH(v *vm) {
	if e.opts.SSH != nil && v.sshPort != 0 {
		e.opts.SSH.Stop(strconv.Itoa(v.id))
		v.sshPort = 0
	}
}
