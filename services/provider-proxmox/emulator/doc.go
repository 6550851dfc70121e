// Package emulator is a stateful, in-memory emulator of the Proxmox VE API
// (the QEMU subset a control plane needs: version, cluster resources, next
// VMID, nodes, storage, VM clone/config/resize/power/destroy, pending config
// changes and hot-plug (hotplug.go), rrddata, tasks and the guest agent's
// network interfaces) for tests and local runs.
//
// The emulator serves the API under /api2/json over HTTPS with a CA it
// generates at start or keeps in files across starts (see Start,
// Options.CAFile and Server.CACertPEM), checks
// "Authorization: PVEAPIToken=user@realm!name=secret" headers, and answers
// with PVE's reply shapes: every body is wrapped in {"data": …}, long
// operations return a UPID and run as tasks, errors carry PVE's messages in
// the HTTP reason phrase and, unless Options.LegacyErrors is set (PVE before
// 8.3), also in a "message" field. The Telmate proxmox-api-go client talks to
// it unchanged.
//
// Tasks run for Options.TaskDurations[type] on the emulator's Clock and
// complete lazily: due tasks are completed at the start of every API call and
// every Go read (VMs, VM), so no background goroutines are needed. A task's
// effects (a clone's config, a started VM, a removed VM, …) are applied when
// it completes; its checks (locks, "already running", shrinking a disk) are
// made when it is created, and a task that fails a check ends at once.
//
// GET /cluster/resources serves each guest's lock and tags from its config
// and, with Options.StatsInterval above 0 (PVE: DefaultStatsInterval), its
// name, status, template flag and sizes as the last pvestatd round saw them
// (see rrd.go, SetStatsInterval and RefreshStats): a reused VMID shows its
// old occupant, a VM made since shows status "unknown" and no name.
//
// The cluster has Options.Nodes, each with its CPUs, memory and bridges
// (GET /nodes/{node}/network), the storages local and local-lvm on every
// node plus Options.Storages (shared or not, on some nodes or all), and
// enforces what PVE does with them: a clone to another node needs every
// disk of the source on shared storage and a shared target storage; a
// storage a node lacks is refused there; a VLAN tag is 1 to 4094; a VM
// whose net0 names a bridge its node lacks fails to start. Memory used is
// the memory of running guests (GET /nodes mem), so a node filled with
// running VMs shows no headroom; ipconfig0 and nameserver are kept as
// written and the agent reports ipconfig0's static address (or a DHCP
// lease), answering "QEMU guest agent is not running" for
// Options.AgentStartDelay after each start as a booting guest's does.
//
// Faults are injected with Go methods (InjectRouteFault, InjectTaskFault,
// SetLatency, SetAgentRunning, SetVMStatus, DeleteVM, SeedVMs, …) or with
// the JSON control API under /_emulator/ (see control.go) so another process
// can drive the emulator. Calls are counted per route pattern (the Route*
// constants); see Calls and CallCounts.
//
// Where the real API's behaviour is not documented or was not checked, the
// emulator makes a choice; such places say "Guess:" in their comments.
package emulator
