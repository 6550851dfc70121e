package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/sshemu"
	"better-compute.io/compute/services/provider-hetzner/emulator"
	pveemulator "better-compute.io/compute/services/provider-proxmox/emulator"
)

func emulatorCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "emulator", Short: "Run a provider API emulator (Hetzner Cloud, Proxmox VE, Hetzner Robot)"}
	var addr string
	var actionDuration time.Duration
	var rateSize int
	hetznerCmd := &cobra.Command{
		Use:   "hetzner",
		Short: "Serve an in-memory Hetzner Cloud API (under /v1) with a fault API (under /_emulator)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fleet := sshemu.NewFleet(g.logger())
			defer fleet.Close()
			emu, err := emulator.Start(emulator.Options{ActionDuration: actionDuration, RateLimitSize: rateSize, Logger: g.logger(),
				SSH: fleet}, addr)
			if err != nil {
				return err
			}
			defer func() { _ = emu.Close() }()
			fmt.Fprintf(os.Stdout, "Hetzner Cloud API emulator on %s\n", emu.URL())
			waitForSignal()
			return nil
		},
	}
	hetznerCmd.Flags().StringVar(&addr, "addr", "127.0.0.1:4680", "listen address")
	hetznerCmd.Flags().DurationVar(&actionDuration, "action-duration", emulator.DefaultActionDuration, "how long each action runs")
	hetznerCmd.Flags().IntVar(&rateSize, "rate-limit", 0, "rate-limit bucket size (default 3600)")
	var pveAddr, caFile, caKeyFile string
	proxmoxCmd := &cobra.Command{
		Use:   "proxmox",
		Short: "Serve an in-memory Proxmox VE API (HTTPS, /api2/json) with a fault API (under /_emulator)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fleet := sshemu.NewFleet(g.logger())
			defer fleet.Close()
			srv, err := startProxmoxEmulator(pveAddr, caFile, caKeyFile, fleet)
			if err != nil {
				return err
			}
			defer func() { _ = srv.Close() }()
			fmt.Fprintf(os.Stdout, "Proxmox VE API emulator on %s\n  token id %s, secret %s\n  CA certificate in %s; template %q (VMID 9000)\n",
				srv.URL(), pveemulator.DefaultTokenID, pveemulator.DefaultTokenSecret, caFile, emulatorTemplate)
			waitForSignal()
			return nil
		},
	}
	proxmoxCmd.Flags().StringVar(&pveAddr, "addr", "127.0.0.1:8006", "listen address")
	proxmoxCmd.Flags().StringVar(&caFile, "ca-file", proxmoxCAFile,
		"the emulator's CA certificate (PEM): reused with --ca-key-file when both exist, else made and written")
	proxmoxCmd.Flags().StringVar(&caKeyFile, "ca-key-file", proxmoxCAKeyFile, "the emulator's CA private key (PEM, mode 0600)")
	cmd.AddCommand(hetznerCmd, proxmoxCmd, robotEmulatorCmd(g))
	return cmd
}
