package emulator

import (
	"io"
	"net"
	"strconv"
	"sync"
)

// sshAddress is one server's SSH address, as a real server's IP:22 is
// one address whatever system it booted: a loopback port that forwards
// each connection to the system srv runs when it arrives (the rescue or
// the installed system's pkg/sshemu machine) and closes it at once while
// none answers (disks without an OS, a server off or still booting).
type sshAddress struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]struct{}
}

// listenSSH starts srv's SSH address; target names the port of the
// system answering now (0: none).
func listenSSH(target func() int) (*sshAddress, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &sshAddress{ln: ln, open: map[net.Conn]struct{}{}}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				a.forward(c, target())
			}()
		}
	}()
	return a, nil
}

// port is the address's port.
func (a *sshAddress) port() int { return a.ln.Addr().(*net.TCPAddr).Port }

// forward copies c to and from the system on port until either side
// closes (port 0: c is closed at once).
func (a *sshAddress) forward(c net.Conn, port int) {
	defer func() { _ = c.Close() }()
	if port == 0 {
		return
	}
	up, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	if !a.track(c, up) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// track records a forwarded pair for close (false: closing already).
func (a *sshAddress) track(conns ...net.Conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open == nil {
		return false
	}
	for _, c := range conns {
		a.open[c] = struct{}{}
	}
	return true
}

// close stops the address and every forwarded connection.
func (a *sshAddress) close() {
	_ = a.ln.Close()
	a.mu.Lock()
	for c := range a.open {
		_ = c.Close()
	}
	a.open = nil
	a.mu.Unlock()
	a.wg.Wait()
}
