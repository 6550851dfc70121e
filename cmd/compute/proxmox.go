package main

import (
	"os"
	"path/filepath"
	"time"

	pveemulator "better-compute.io/compute/services/provider-proxmox/emulator"
)

// proxmoxCAFile is where `compute up` writes the PVE emulator's CA (PEM),
// for the caCert field of a proxmox account.
const proxmoxCAFile = "proxmox-ca.pem"

// EmulatorTemplate is the cloud-init template the local PVE emulator offers.
const emulatorTemplate = "ubuntu-24-04"

// startProxmoxEmulator starts the PVE API emulator on addr with one node,
// one template (VMID 9000) and task durations of a small real cluster, and
// writes its CA to dataDir (when dataDir is not "").
func startProxmoxEmulator(addr, dataDir string) (*pveemulator.Server, error) {
	srv, err := pveemulator.Start(pveemulator.Options{
		ListenAddr: addr,
		Templates:  []pveemulator.Template{{VMID: 9000, Name: emulatorTemplate, DiskGiB: 10, Cores: 1, MemoryMiB: 1024, Config: map[string]string{"ipconfig0": "ip=dhcp"}}},
		TaskDurations: map[string]time.Duration{
			"qmclone": 2 * time.Second, "qmconfig": 200 * time.Millisecond, "resize": 300 * time.Millisecond,
			"qmstart": time.Second, "qmstop": 500 * time.Millisecond, "qmshutdown": time.Second, "qmdestroy": 500 * time.Millisecond,
		},
	})
	if err != nil {
		return nil, err
	}
	if dataDir != "" {
		if err := os.WriteFile(filepath.Join(dataDir, proxmoxCAFile), srv.CACertPEM(), 0o644); err != nil {
			_ = srv.Close()
			return nil, err
		}
	}
	return srv, nil
}
