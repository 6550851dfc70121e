package fake

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/pkg/sshemu"
)

// fleetSSH implements conformance.SSH over an emulator's SSH fleet: its
// machines accept any key, so Login is a fresh key of the run.
type fleetSSH struct {
	fleet *sshemu.Fleet
	key   ssh.Signer
}

var _ conformance.SSH = fleetSSH{}

// newFleetSSH is a fleet for an emulator and its hook.
func newFleetSSH(log zerolog.Logger) (fleetSSH, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fleetSSH{}, err
	}
	key, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return fleetSSH{}, err
	}
	return fleetSSH{fleet: sshemu.NewFleet(log), key: key}, nil
}

// Login is root with the run's key.
func (f fleetSSH) Login() (string, ssh.Signer) { return "root", f.key }

// ChangeHostKey gives machine id a new host key. Errors: no such machine.
func (f fleetSSH) ChangeHostKey(_ context.Context, id string) error {
	m := f.fleet.Machine(id)
	if m == nil {
		return fmt.Errorf("machine %s has no SSH endpoint", id)
	}
	return m.ChangeHostKey()
}
