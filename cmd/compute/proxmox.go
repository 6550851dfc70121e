package main

import (
	"time"

	"better-compute.io/compute/pkg/sshemu"
	pveemulator "better-compute.io/compute/services/provider-proxmox/emulator"
)

// proxmoxCAFile and proxmoxCAKeyFile are where `compute up` keeps the PVE
// emulator's CA (PEM) in its data directory: the certificate for the
// caCert field of a proxmox account, and its key, so that a restart
// serves a certificate the pinned CA still verifies.
const (
	proxmoxCAFile    = "proxmox-ca.pem"
	proxmoxCAKeyFile = "proxmox-ca-key.pem"
)

// EmulatorTemplate is the cloud-init template the local PVE emulator offers.
const emulatorTemplate = "ubuntu-24-04"

// emulatorSharedStorage is the local PVE emulator's shared storage, which
// holds the template, so clones land on either node.
const emulatorSharedStorage = "ceph-vm"

// startProxmoxEmulator starts the PVE API emulator on addr with two nodes
// (pve1, pve2, each with bridges vmbr0 and vmbr1), a shared storage
// holding one template (VMID 9000), task durations of a small real
// cluster and PVE's ~10 s lag of /cluster/resources, signing its
// certificate with the CA kept in caFile and keyFile (made there on the
// first start); its VMs get SSH endpoints from ssh (nil: none).
func startProxmoxEmulator(addr, caFile, keyFile string, ssh *sshemu.Fleet) (*pveemulator.Server, error) {
	bridges := []string{pveemulator.DefaultBridge, "vmbr1"}
	return pveemulator.Start(pveemulator.Options{
		ListenAddr: addr,
		SSH:        ssh,
		Nodes:      []pveemulator.Node{{Name: "pve1", Bridges: bridges}, {Name: "pve2", Bridges: bridges}},
		Storages:   []pveemulator.Storage{{Name: emulatorSharedStorage, Shared: true}},
		Templates: []pveemulator.Template{
			{VMID: 9000, Name: emulatorTemplate, DiskGiB: 10, Cores: 1, MemoryMiB: 1024, Storage: emulatorSharedStorage,
				Config: map[string]string{"ipconfig0": "ip=dhcp"}},
		},
		TaskDurations: map[string]time.Duration{
			"qmclone": 2 * time.Second, "qmconfig": 200 * time.Millisecond, "resize": 300 * time.Millisecond,
			"qmstart": time.Second, "qmstop": 500 * time.Millisecond, "qmshutdown": time.Second, "qmdestroy": 500 * time.Millisecond,
		},
		StatsInterval: pveemulator.DefaultStatsInterval,
		CAFile:        caFile,
		CAKeyFile:     keyFile,
	})
}
