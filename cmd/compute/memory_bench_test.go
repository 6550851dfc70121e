package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/natsauth"
)

// BenchmarkMemoryAtScale measures the memory of the processes an operator
// runs, at COMPUTE_BENCH_INSTANCES settled instances (default 100000,
// written straight to the instances bucket): a reconciler replica alone
// (`compute serve reconciler`, resync off, against an embedded server of
// the benchmark's own) and the whole `compute up`. Each is measured once
// its instance index answered a full first page (the time that takes is
// printed) and again after one metrics scrape (the collector reads every
// instance): resident set (VmRSS) and its peak (VmHWM) from /proc. A
// resync's own peak is BenchmarkListAtScale's (services/reconciler). Run it
// once:
//
//	go test -run '^$' -bench MemoryAtScale -benchtime 1x -timeout 30m ./cmd/compute/
func BenchmarkMemoryAtScale(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("COMPUTE_BENCH_INSTANCES")); err == nil && v > 0 {
		n = v
	}
	for b.Loop() {
		env := bustest.Start(b)
		seedSettled(b, env.NC, "acme", n)
		replica := startMeasured(b, "--nats", env.URL, "serve", "reconciler", "--metrics-addr", "127.0.0.1:0",
			"--allow-unsynced-store", "--resync-interval", "-1s")
		b.Logf("reconciler replica at %d instances: %s", n, replica.measure(b, env.NC, "acme", n))

		up := startMeasured(b, "up", "--data", b.TempDir(), "--nats-port", "0", "--hetzner-addr", "127.0.0.1:0",
			"--proxmox-addr", "127.0.0.1:0", "--console-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
		nc, err := bus.Connect(bus.ConnectOptions{URL: up.natsURL, CredsFile: up.adminCreds, FailFast: true})
		if err != nil {
			b.Fatal(err)
		}
		seedSettled(b, nc, "demo", n)
		b.Logf("compute up at %d instances: %s", n, up.measure(b, nc, "demo", n))
		nc.Close()
	}
}

// seedSettled writes n records of settled, running instances of tenant
// straight to the instances bucket, many publishes in flight.
func seedSettled(b *testing.B, nc *nats.Conn, tenant string, n int) {
	b.Helper()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	pool := api.NewID(api.PrefixPool)
	start := time.Now()
	for i := range n {
		now := time.Now().UTC()
		inst := api.Instance{ID: api.NewID(api.PrefixInstance), TenantID: tenant, PoolID: pool, Flavor: "small", Image: "debian-12",
			Name: fmt.Sprintf("web-%06d", i), Desired: api.DesiredState{Power: api.PowerOn}, Generation: 1, Version: 3,
			CreatedAt: now, UpdatedAt: now, Status: api.InstanceStatus{Phase: api.PhaseRunning, ObservedGeneration: 1,
				CreateRequested: true, CreateRequestedAt: &now, Machine: &api.ExternalMachine{ID: strconv.Itoa(1_000_000 + i),
					Name: fmt.Sprintf("web-%06d", i), State: api.StateRunning, OfferID: "cx23", Region: "fsn1",
					Addresses: []string{"203.0.113.7", "2001:db8::7"}}}}
		inst.Status.Machine.IdempotencyKey = inst.ID
		data, err := json.Marshal(inst)
		if err != nil {
			b.Fatal(err)
		}
		subject := "$KV." + bus.BucketInstances + "." + bus.RecordKey(tenant, inst.ID)
		for {
			_, err := js.PublishAsync(subject, data, jetstream.WithStallWait(time.Minute))
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				b.Fatal(err)
			}
			<-js.PublishAsyncComplete()
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		b.Fatal("seeding did not complete")
	}
	b.Logf("seeded %d instances of %s in %v", n, tenant, time.Since(start).Round(time.Millisecond))
}

// measured is a compute process of the benchmark.
type measured struct {
	cmd                             *exec.Cmd
	metricsURL, natsURL, adminCreds string
}

// startMeasured runs the compute binary with args until the benchmark
// ends and returns once its services started, with its metrics URL (and,
// for `compute up`, its NATS URL and admin credential).
func startMeasured(b *testing.B, args ...string) *measured {
	b.Helper()
	cmd := exec.Command(os.Args[0], args...) //nolint:gosec // the test binary
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	m := &measured{cmd: cmd}
	started := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(stderr)
		once := false
		for lines.Scan() {
			var line struct{ Message, URL string }
			_ = json.Unmarshal(lines.Bytes(), &line)
			switch line.Message {
			case "serving metrics":
				m.metricsURL = line.URL
			case "service started":
				if !once && args[0] == "--nats" {
					once = true
					close(started)
				}
			}
		}
	}()
	if args[0] == "up" {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			fields := strings.Fields(lines.Text())
			switch {
			case len(fields) >= 2 && fields[0] == "NATS":
				m.natsURL = fields[1]
			case len(fields) >= 3 && fields[0] == "admin":
				m.adminCreds = fields[2]
			case len(fields) >= 2 && fields[0] == "metrics":
				m.metricsURL = fields[1]
			}
			if m.natsURL != "" && m.adminCreds != "" && m.metricsURL != "" {
				go func() { _, _ = io.Copy(io.Discard, stdout) }()
				if filepath.Base(m.adminCreds) != natsauth.UserAdmin+".creds" {
					b.Fatalf("compute up's banner names %s as the admin credential", m.adminCreds)
				}
				return m
			}
		}
		b.Fatal("compute up ended before its banner")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		b.Fatalf("compute %s did not start", strings.Join(args, " "))
	}
	return m
}

// measure waits until the process answers a full first page of tenant's
// instances.list, scrapes its metrics once, and says how long each took
// and the process's memory after each.
func (m *measured) measure(b *testing.B, nc *nats.Conn, tenant string, n int) string {
	b.Helper()
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var page api.List[api.Instance]
		err := bus.Call(ctx, nc, bus.Command(tenant, bus.ResourceInstances, "list"), api.InstanceListRequest{}, &page)
		cancel()
		if err == nil && len(page.Items) == min(n, bus.DefaultPageSize) {
			break
		}
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("no full first page after %v: %d items, %v", time.Since(start), len(page.Items), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	loaded := time.Since(start)
	afterLoad := procMemory(b, m.cmd.Process.Pid)
	start = time.Now()
	resp, err := http.Get(m.metricsURL) //nolint:noctx // a loopback scrape
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	scraped := time.Since(start)
	return fmt.Sprintf("first full page after %v: %s; after a metrics scrape (%v): %s", loaded.Round(time.Millisecond), afterLoad,
		scraped.Round(time.Millisecond), procMemory(b, m.cmd.Process.Pid))
}

// procMemory is a process's VmRSS and VmHWM from /proc.
func procMemory(b *testing.B, pid int) string {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "VmRSS" || k == "VmHWM") {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			got[k] = fmt.Sprintf("%.0f MB", float64(kb)/1024)
		}
	}
	return "RSS " + got["VmRSS"] + ", peak " + got["VmHWM"]
}
