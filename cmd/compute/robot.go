package main

import (
	"fmt"
	"os"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/sshemu"
	robotemulator "better-compute.io/compute/services/provider-hetzner-robot/emulator"
)

// demoRobotServers are the dedicated servers the Robot emulator of
// `compute up` and `compute emulator hetzner-robot` starts with: two free
// to claim, one another tool named (not ours: never touched).
var demoRobotServers = []robotemulator.ServerSpec{
	{Number: 321, Product: "EX44", DC: "FSN1-DC14"},
	{Number: 322, Product: "AX52", DC: "NBG1-DC3"},
	{Number: 323, Product: "EX101", DC: "FSN1-DC14", Name: "db-primary"},
}

// defaultRobotAddr is where the Robot webservice emulator listens.
const defaultRobotAddr = "127.0.0.1:4681"

// startRobotEmulator serves the Robot webservice emulator on addr (any
// non-empty user and password log in) with the demo servers, their SSH
// systems in fleet.
func startRobotEmulator(addr string, fleet *sshemu.Fleet, log zerolog.Logger) (*robotemulator.Server, error) {
	srv, err := robotemulator.Start(robotemulator.Options{SSH: fleet, Logger: log}, addr)
	if err != nil {
		return nil, err
	}
	for _, s := range demoRobotServers {
		if err := srv.Emulator().AddServer(s); err != nil {
			_ = srv.Close()
			return nil, err
		}
	}
	return srv, nil
}

// robotEmulatorCmd is `compute emulator hetzner-robot`.
func robotEmulatorCmd(g *globals) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "hetzner-robot",
		Short: "Serve an in-memory Hetzner Robot webservice with servers 321, 322 (free) and 323 (named by another tool)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fleet := sshemu.NewFleet(g.logger())
			defer fleet.Close()
			srv, err := startRobotEmulator(addr, fleet, g.logger())
			if err != nil {
				return err
			}
			defer func() { _ = srv.Close() }()
			fmt.Fprintf(os.Stdout, "Hetzner Robot webservice emulator on %s (any user and password)\n", srv.URL())
			waitForSignal()
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", defaultRobotAddr, "listen address")
	return cmd
}
