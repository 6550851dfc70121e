package proxmox

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Resize moves a VM of this system to the account's size req.OfferID:
//  1. GET …/config (ownership; a VM whose description already names the
//     offer is answered as it is, Changed false, nothing sent) and GET
//     …/status/current;
//  2. PUT …/config (synchronous) sets what differs of cores (sockets 1)
//     and memory (MiB), and the description's offer line. On a running VM PVE applies what its
//     hotplug setting takes live (memory with memory hot-plug and numa 1;
//     cores never, since only vcpus are hot-plugged) and keeps the rest
//     pending until the next start;
//  3. PUT …/resize grows the boot disk to the size's disk (absolute;
//     skipped when the disk is that large already: never shrunk);
//  4. on a running VM, GET …/pending: when a change is still pending the
//     VM is rebooted (POST …/status/reboot, which applies pending changes;
//     Rebooted), or stopped (POST …/status/stop) when req.Power is off;
//     a stopped VM is started when req.Power is on.
//
// Each task is waited for. The offer line is written with the sizes, so a
// caller that lost the reply re-observes the offer with get.
//
// Errors: INVALID_INPUT (id; offerId not one of the account's sizes,
// nothing sent), NOT_FOUND, ACCESS_DENIED, PROVIDER_ERROR (a failed task,
// a hot-plug problem; details.notExecuted when the config change itself
// was refused, e.g. the VM locked), UNAVAILABLE.
func (c *client) Resize(ctx context.Context, call *provider.Call, req api.ProviderResizeRequest) (res *api.ResizeResult, err error) {
	size, ok := c.cfg.size(req.OfferID)
	if !ok {
		ce := api.InvalidInput("offerId", "offer %q is not one of the account's sizes", req.OfferID)
		ce.Details.NotExecuted, ce.Details.Permanent = true, true
		return nil, ce
	}
	s, vmid, err := c.openVM(ctx, call, provider.VerbResize, req.ID)
	if err != nil {
		return nil, err
	}
	defer s.end(ctx, &err)
	vm, err := s.managedVM(ctx, vmid)
	if err != nil {
		return nil, err
	}
	status, err := s.status(ctx, *vm)
	if err != nil {
		return nil, err
	}
	running := status == statusRunning
	if vm.cfg.offer() == req.OfferID {
		state, _ := machineState(false, vm.cfg.lock(), status)
		return &api.ResizeResult{Machine: c.toMachine(vmid, vm.cfg, state)}, nil
	}
	path := qemuPath(vm.node, vmid)
	// Only what differs: a key set to its current value on a running VM
	// would be recorded pending all the same.
	update := map[string]any{"description": withOffer(vm.cfg["description"], req.OfferID)}
	if vm.cfg.cores() != size.Vcpu {
		update["cores"] = size.Vcpu
	}
	if vm.cfg.memoryMiB() != size.MemoryGiB*1024 {
		update["memory"] = size.MemoryGiB * 1024
	}
	if sk := vm.cfg["sockets"]; sk != "" && sk != "1" {
		update["sockets"] = 1
	}
	if err := s.startTask(ctx, http.MethodPut, path+"/config", update); err != nil {
		return nil, err
	}
	if disk, cur, ok := vm.cfg.bootDisk(); ok && cur < int64(size.DiskGiB)<<30 {
		grow := map[string]any{"disk": disk, "size": fmt.Sprintf("%dG", size.DiskGiB)}
		if err := s.startTask(ctx, http.MethodPut, path+"/resize", grow); err != nil {
			return nil, err
		}
	}
	res = &api.ResizeResult{Changed: true}
	wantOn := running
	if req.Power != "" {
		wantOn = req.Power == api.PowerOn
	}
	switch {
	case running && !wantOn:
		err = s.startTask(ctx, http.MethodPost, path+"/status/stop", nil)
	case running:
		pending, perr := s.pendingChanges(ctx, path)
		if perr != nil {
			return nil, perr
		}
		if len(pending) > 0 {
			res.Rebooted = true
			err = s.startTask(ctx, http.MethodPost, path+"/status/reboot", nil)
		}
	case wantOn:
		if err = s.startTask(ctx, http.MethodPost, path+"/status/start", nil); isKind(err, kindAlreadyRunning) {
			err = nil
		}
	}
	if err != nil {
		return nil, err
	}
	cfg, err := s.readConfig(ctx, vm.node, vmid)
	if err != nil {
		return nil, err
	}
	if status, err = s.status(ctx, *vm); err != nil {
		return nil, err
	}
	state, _ := machineState(false, cfg.lock(), status)
	res.Machine = c.toMachine(vmid, cfg, state)
	return res, nil
}

// pendingChanges are the keys GET …/pending reports pending (a value that
// applies at the next start, or a deletion).
func (s *session) pendingChanges(ctx context.Context, path string) ([]string, error) {
	var rows []struct {
		Key     string          `json:"key"`
		Pending json.RawMessage `json:"pending"`
		Delete  json.RawMessage `json:"delete"`
	}
	if err := s.get(ctx, path+"/pending", nil, &rows); err != nil {
		return nil, err
	}
	var keys []string
	for _, r := range rows {
		if len(r.Pending) > 0 || len(r.Delete) > 0 {
			keys = append(keys, r.Key)
		}
	}
	return keys, nil
}

// withOffer is desc with its offer line naming offer (added when absent).
func withOffer(desc, offer string) string {
	lines := strings.Split(desc, "\n")
	line := offerLinePrefix + url.QueryEscape(offer)
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), offerLinePrefix) {
			lines[i] = line
			return strings.Join(lines, "\n")
		}
	}
	return desc + "\n" + line
}

// rrdFrames are rrddata's timeframes by resolution (PVE 8: 70 slots
// each), smallest first.
var rrdFrames = []struct {
	name string
	res  time.Duration
}{
	{"hour", time.Minute}, {"day", 30 * time.Minute}, {"week", 3 * time.Hour},
	{"month", 12 * time.Hour}, {"year", 7 * 24 * time.Hour},
}

// rrdSeries maps rrddata fields to series of each metrics type: name,
// unit, field and the factor a value is multiplied by.
var rrdSeries = map[api.MetricsType][]struct {
	name, unit, field string
	perCPU            bool // × 100 × maxcpu: a fraction of all CPUs → percent of one, summed
}{
	api.MetricsCPU:     {{"cpu", "percent", "cpu", true}},
	api.MetricsDisk:    {{"disk.0.bandwidth.read", "bytes/s", "diskread", false}, {"disk.0.bandwidth.write", "bytes/s", "diskwrite", false}},
	api.MetricsNetwork: {{"network.0.bandwidth.in", "bytes/s", "netin", false}, {"network.0.bandwidth.out", "bytes/s", "netout", false}},
}

// frameFor is the smallest timeframe whose 70 slots reach back to from.
func frameFor(from, now time.Time) (string, time.Duration) {
	for _, f := range rrdFrames {
		if now.Sub(from) <= 70*f.res {
			return f.name, f.res
		}
	}
	last := rrdFrames[len(rrdFrames)-1]
	return last.name, last.res
}

// Metrics reads GET /nodes/{node}/qemu/{vmid}/rrddata?timeframe=…&cf=AVERAGE
// (after GET …/config for the node and ownership): the smallest timeframe
// reaching back to w.From, its slots in [From, To) mapped to Hetzner's
// series names (cpu in percent of one vCPU, summed: PVE's fraction × 100
// × maxcpu; diskread/diskwrite and netin/netout in bytes/s), slots
// without data (the VM stopped) left out, averaged into buckets of w.Step
// when that is larger than the timeframe's resolution (the answer's step
// is the larger of the two).
//
// Errors: INVALID_INPUT (id), NOT_FOUND, ACCESS_DENIED, PROVIDER_ERROR,
// UNAVAILABLE.
func (c *client) Metrics(ctx context.Context, call *provider.Call, id string, w api.MetricsWindow) (out *api.Metrics, err error) {
	s, vmid, err := c.openVM(ctx, call, provider.VerbMetrics, id)
	if err != nil {
		return nil, err
	}
	defer s.end(ctx, &err)
	vm, err := s.managedVM(ctx, vmid)
	if err != nil {
		return nil, err
	}
	frame, res := frameFor(w.From, call.Clock.Now())
	var slots []map[string]float64
	q := url.Values{"timeframe": {frame}, "cf": {"AVERAGE"}}
	if err := s.get(ctx, qemuPath(vm.node, vmid)+"/rrddata", q, &slots); err != nil {
		return nil, err
	}
	step := max(int64(res/time.Second), w.Step)
	out = &api.Metrics{Type: w.Type, From: w.From.UTC(), To: w.To.UTC(), Step: step, Series: []api.MetricSeries{}}
	for _, sr := range rrdSeries[w.Type] {
		series := api.MetricSeries{Name: sr.name, Unit: sr.unit, Points: []api.MetricPoint{}}
		var bucket int64 = math.MinInt64
		var sum float64
		var n int
		flush := func() {
			if n > 0 {
				series.Points = append(series.Points, api.MetricPoint{Time: time.Unix(bucket, 0).UTC(), Value: sum / float64(n)})
			}
		}
		for _, slot := range slots {
			t := int64(slot["time"])
			v, has := slot[sr.field]
			if !has || t < w.From.Unix() || t >= w.To.Unix() {
				continue
			}
			if sr.perCPU {
				v *= 100 * max(slot["maxcpu"], 1)
			}
			if b := t / step * step; b != bucket {
				flush()
				bucket, sum, n = b, 0, 0
			}
			sum += v
			n++
		}
		flush()
		out.Series = append(out.Series, series)
	}
	sort.Slice(out.Series, func(i, j int) bool { return out.Series[i].Name < out.Series[j].Name })
	return out, nil
}
