package emulator

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// defaultHotplug is PVE's hotplug setting when none is set (or "1").
const defaultHotplug = "network,disk,usb"

// hotplugs reports whether the VM's hotplug setting lists what
// (network, disk, cpu, memory, usb, cloudinit): "0" is none, "1" or no
// setting PVE's default.
func (v *vm) hotplugs(what string) bool {
	h := v.config["hotplug"]
	switch h {
	case "0":
		return false
	case "", "1":
		h = defaultHotplug
	}
	return slices.Contains(strings.Split(h, ","), what)
}

// pendingLocked decides whether a config value set on v goes to its
// pending section instead of applying now, and records it there. Only a
// running VM has pending changes, and only for the hardware keys PVE
// cannot always change live (qemu-server's vmconfig_hotplug_pending):
//   - cores and sockets: always pending;
//   - vcpus: live with cpu in hotplug and at most sockets×cores, else
//     pending;
//   - memory: live with memory in hotplug and numa 1, else pending.
//
// Every other key applies at once. Guess: PVE keeps more keys pending
// (cloud-init ones, some drive options); the emulator applies them.
func (v *vm) pendingLocked(key, val string) bool {
	if v.status != StatusRunning {
		return false
	}
	if cur, ok := v.config[key]; ok && cur == val {
		delete(v.pending, key) // Guess: PVE drops a pending value equal to the current one
		return false
	}
	live := true
	switch key {
	case "cores", "sockets":
		live = false
	case "vcpus":
		live = v.hotplugs("cpu") && atoiOr(val, 1) <= atoiOr(v.config["sockets"], 1)*v.cores()
	case "memory":
		live = v.hotplugs("memory") && v.config["numa"] == "1"
	}
	if live {
		delete(v.pending, key)
		return false
	}
	if v.pending == nil {
		v.pending = map[string]string{}
	}
	v.pending[key] = val
	return true
}

// applyPending applies v's pending changes (at a start, or a reboot's).
func (v *vm) applyPending() {
	for k, val := range v.pending {
		v.config[k] = val
	}
	v.pending = nil
}

// pendingEntry is one row of GET …/pending.
type pendingEntry struct {
	Key     string `json:"key"`
	Value   any    `json:"value,omitempty"`
	Pending any    `json:"pending,omitempty"`
}

// getPending serves GET /nodes/{node}/qemu/{vmid}/pending: one row per
// config key, {key, value} for what runs and pending for a value that
// applies at the next start, sorted by key.
func (e *Emulator) getPending(c *call) (any, *apiError) {
	v, err := e.vmOn(c)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(v.config)+len(v.pending))
	for k := range v.config {
		keys = append(keys, k)
	}
	for k := range v.pending {
		if _, ok := v.config[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]pendingEntry, 0, len(keys))
	for _, k := range keys {
		row := pendingEntry{Key: k}
		if val, ok := v.config[k]; ok {
			row.Value = configJSONValue(k, val)
		}
		if val, ok := v.pending[k]; ok {
			row.Pending = configJSONValue(k, val)
		}
		out = append(out, row)
	}
	return out, nil
}

// rrdTimeframes are rrddata's timeframes: PVE 8 answers 70 slots of the
// resolution each.
var rrdTimeframes = map[string]time.Duration{
	"hour": time.Minute, "day": 30 * time.Minute, "week": 3 * time.Hour,
	"month": 12 * time.Hour, "year": 7 * 24 * time.Hour,
}

// rrdSlots is how many slots rrddata answers (PVE 8).
const rrdSlots = 70

// getRRDData serves GET /nodes/{node}/qemu/{vmid}/rrddata?timeframe=…&cf=…:
// 70 slots of the timeframe's resolution ending before now, ascending,
// each {time, maxcpu, cpu, maxmem, mem, maxdisk, disk, netin, netout,
// diskread, diskwrite}. Slots while the VM did not run (before its start,
// or any while it is stopped) carry only time, as PVE's do. Values are a
// daily wave shifted per VMID (cpu a fraction of maxcpu; memory and disk
// bytes; I/O bytes per second). Guess: MAX answers the same values as
// AVERAGE. Errors: 400 for a timeframe or cf not in the enumeration.
func (e *Emulator) getRRDData(c *call) (any, *apiError) {
	v, err := e.vmOn(c)
	if err != nil {
		return nil, err
	}
	res, ok := rrdTimeframes[c.p["timeframe"]]
	if !ok {
		return nil, errParams(map[string]string{"timeframe": "value '" + c.p["timeframe"] +
			"' does not have a value in the enumeration 'hour, day, week, month, year'"})
	}
	if cf := c.p["cf"]; cf != "" && cf != "AVERAGE" && cf != "MAX" {
		return nil, errParams(map[string]string{"cf": "value '" + cf + "' does not have a value in the enumeration 'AVERAGE, MAX'"})
	}
	step := int64(res / time.Second)
	last := c.now.Unix()/step*step - step // the last slot that ended
	_, disk := v.bootDisk()
	phase := float64(v.id%89) / 89 * 2 * math.Pi
	out := make([]map[string]any, 0, rrdSlots)
	for i := int64(rrdSlots - 1); i >= 0; i-- {
		t := last - i*step
		slot := map[string]any{"time": t}
		if v.status == StatusRunning && !time.Unix(t, 0).Before(v.startedAt.Truncate(res)) {
			w := 0.5 + 0.4*math.Sin(float64(t%86400)/86400*2*math.Pi+phase)
			maxMem := float64(int64(v.memoryMiB()) << 20)
			slot["maxcpu"], slot["cpu"] = v.cpus(), w*0.8
			slot["maxmem"], slot["mem"] = maxMem, maxMem*(0.3+0.5*w)
			slot["maxdisk"], slot["disk"] = float64(disk), 0.0
			slot["netin"], slot["netout"] = w*(1<<20), w*(512<<10)
			slot["diskread"], slot["diskwrite"] = w*(4<<20), w*(2<<20)
		}
		out = append(out, slot)
	}
	return out, nil
}
