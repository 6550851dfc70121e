package emulator

import "time"

// DefaultStatsInterval is how often pvestatd refreshes the RRD cache that
// /cluster/resources reads names, statuses, the template flag and sizes
// from ($updatetime in PVE/Service/pvestatd.pm).
const DefaultStatsInterval = 10 * time.Second

// rrdEntry is what pvestatd last reported of a VMID: the fields of a
// /cluster/resources guest that PVE takes from the RRD cache, not from the
// VM's config (lock and tags) or the cluster's VM list (vmid, node, type).
type rrdEntry struct {
	name     string
	status   string
	template bool
	maxCPU   int
	maxMem   int64
	maxDisk  int64
	uptime   int64
}

// statsOf is v's RRD entry as pvestatd would write it at now.
func statsOf(v *vm, now time.Time) rrdEntry {
	_, disk := v.bootDisk()
	return rrdEntry{name: v.name(), status: v.status, template: v.isTemplate(), maxCPU: v.cpus(),
		maxMem: int64(v.memoryMiB()) << 20, maxDisk: disk, uptime: v.uptime(now)}
}

// refreshStatsLocked is one pvestatd round: every VM's entry is written
// from its current state. Entries of VMIDs that no longer exist are kept
// (Guess: pmxcfs keeps a removed VM's RRD entry until the VMID is written
// again), so a reused VMID shows its old occupant until the next round.
// e.mu must be held.
func (e *Emulator) refreshStatsLocked(now time.Time) {
	if e.rrd == nil {
		e.rrd = map[int]rrdEntry{}
	}
	for id, v := range e.vms {
		e.rrd[id] = statsOf(v, now)
	}
	e.rrdAt = now
}

// guestStats is the RRD part of v's /cluster/resources entry at now, and
// whether pvestatd has reported the VMID at all. With a stats interval of
// 0 it is v's current state; otherwise a round runs first when the last
// one is an interval old or more (lazily: nothing else reads the cache),
// and the entry is what that round saw, which may be another VM's.
// e.mu must be held.
func (e *Emulator) guestStats(v *vm, now time.Time) (rrdEntry, bool) {
	if e.statsInterval <= 0 {
		return statsOf(v, now), true
	}
	if now.Sub(e.rrdAt) >= e.statsInterval {
		e.refreshStatsLocked(now)
	}
	s, ok := e.rrd[v.id]
	return s, ok
}

// SetStatsInterval sets how often pvestatd refreshes the RRD cache on the
// emulator's clock (PVE: DefaultStatsInterval). While it is above 0,
// /cluster/resources serves each guest's name, status, template flag and
// sizes as the last round saw them: a VMID reused since shows its old
// occupant, a VM made since shows status "unknown" and no name. 0 serves
// them current (the default). Lock and tags are always current.
func (e *Emulator) SetStatsInterval(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.statsInterval = d
}

// RefreshStats runs a pvestatd round now: /cluster/resources shows every
// VM as it is until the next change.
func (e *Emulator) RefreshStats() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advanceLocked()
	e.refreshStatsLocked(e.clock.Now())
}
