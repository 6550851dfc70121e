package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	pveemulator "better-compute.io/compute/services/provider-proxmox/emulator"
	"better-compute.io/compute/services/tenants"
)

// scrape is one scrape of a metrics endpoint, parsed by the Prometheus
// text parser.
type scrape struct {
	text     string
	families map[string]*dto.MetricFamily
}

func scrapeMetrics(t *testing.T, url string) scrape {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test's loopback scrape
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	var text strings.Builder
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(teeReader{resp, &text})
	if err != nil {
		t.Fatalf("scrape of %s does not parse: %v", url, err)
	}
	return scrape{text: text.String(), families: families}
}

// teeReader reads the response body and keeps a copy of it.
type teeReader struct {
	resp *http.Response
	copy *strings.Builder
}

func (r teeReader) Read(p []byte) (int, error) {
	n, err := r.resp.Body.Read(p)
	r.copy.Write(p[:n])
	return n, err
}

// value is the value of the sample of name whose labels include want
// (a counter's, a gauge's or a histogram's count), summed over the
// samples that match; found is false when none does.
func (s scrape) value(name string, want map[string]string) (v float64, found bool) {
	f := s.families[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, w := range want {
			if labels[k] != w {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			v += m.GetCounter().GetValue()
		case m.Gauge != nil:
			v += m.GetGauge().GetValue()
		case m.Histogram != nil:
			v += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return v, found
}

// labelValues are every label value of the scrape, by "metric{label}".
func (s scrape) labelValues() map[string][]string {
	out := map[string][]string{}
	for name, f := range s.families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				k := name + "{" + l.GetName() + "}"
				out[k] = append(out[k], l.GetValue())
			}
		}
	}
	return out
}

// delta is how much the sample moved from before to s.
func (s scrape) delta(before scrape, name string, labels map[string]string) float64 {
	now, _ := s.value(name, labels)
	was, _ := before.value(name, labels)
	return now - was
}

// A `compute up` stack serves every service's metrics on one loopback
// endpoint; driving it through the bus (a Hetzner instance created and
// deleted, a bad request, a Proxmox account's offers) moves the
// counters of each service, and no label holds a tenant's data.
func TestMetricsMoveAsTheStackWorks(t *testing.T) {
	logs := &bustest.LogBuffer{}
	dir := t.TempDir()
	s, err := startStack(upOptions{dataDir: dir, natsHost: "127.0.0.1", hetznerAddr: "127.0.0.1:0", proxmoxAddr: "127.0.0.1:0",
		services: serviceConfig{log: zerolog.New(logs).Level(zerolog.DebugLevel), resyncInterval: -1, metricsAddr: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	url := s.metrics.URL()
	before := scrapeMetrics(t, url)

	c := &cli{t: t, url: s.nats.ClientURL(), tenant: "demo", creds: s.demoCreds}
	sec, acct, pool := c.hetznerPool("metrics")
	var inst api.Instance
	c.must(&inst, "", "instances", "create", "--pool", pool.ID, "--flavor", "small", "--name", "web-1", "--wait")
	running := scrapeMetrics(t, url)

	// A create body that is not an object: INVALID_INPUT, counted by code.
	bad, err := s.nc.Request(bus.Command("acme", bus.ResourceInstances, "create"), []byte(`[]`), 5*time.Second)
	if err != nil || !strings.Contains(string(bad.Data), string(api.CodeInvalidInput)) {
		t.Fatalf("bad create: %v %s", err, bad.Data)
	}
	// Bad requests to the tenants service and to the Robot provider.
	for _, subject := range []string{tenants.Subject("create"), bus.ProviderCall("hetzner-robot", "create")} {
		bad, err := s.nc.Request(subject, []byte(`[]`), 5*time.Second)
		if err != nil || !strings.Contains(string(bad.Data), string(api.CodeInvalidInput)) {
			t.Fatalf("bad request to %s: %v %s", subject, err, bad.Data)
		}
	}
	pve := c.proxmoxAccount(s, dir)
	var offers api.List[api.Offer]
	c.must(&offers, "", "accounts", "offers", pve.ID)
	c.must(nil, "", "instances", "delete", inst.ID, "--wait")
	after := scrapeMetrics(t, url)

	hz := map[string]string{"provider": "hetzner-cloud"}
	deltas := []struct {
		what, name string
		labels     map[string]string
		atLeast    float64
		exactly    bool
	}{
		{"the server create", "compute_provider_http_requests_total",
			with(hz, "method", "POST", "route", "/servers", "status", "201"), 1, true},
		{"the server delete", "compute_provider_http_requests_total",
			with(hz, "method", "DELETE", "route", "/servers/{id}"), 1, false},
		{"its timing", "compute_provider_http_request_duration_seconds", with(hz, "method", "POST", "route", "/servers"), 1, true},
		{"passes done", "compute_reconcile_passes_total", map[string]string{"outcome": "done"}, 2, false},
		{"their durations", "compute_reconcile_pass_duration_seconds", map[string]string{"outcome": "done"}, 2, false},
		{"the instance create", "compute_bus_requests_total",
			map[string]string{"service": "reconciler", "endpoint": "instances-create", "code": "OK"}, 1, true},
		{"the bad create", "compute_bus_requests_total",
			map[string]string{"service": "reconciler", "endpoint": "instances-create", "code": "INVALID_INPUT"}, 1, true},
		{"the bad create's latency", "compute_bus_request_duration_seconds",
			map[string]string{"service": "reconciler", "endpoint": "instances-create", "code": "INVALID_INPUT"}, 1, true},
		{"the bad tenant create", "compute_bus_requests_total",
			map[string]string{"service": "tenants", "code": "INVALID_INPUT"}, 1, true},
		{"the bad Robot create", "compute_bus_requests_total",
			map[string]string{"service": "provider-hetzner-robot", "endpoint": "provider-create", "code": "INVALID_INPUT"}, 1, true},
		{"the provider's create", "compute_bus_requests_total",
			map[string]string{"service": "provider-hetzner-cloud", "endpoint": "provider-create", "code": "OK"}, 1, true},
		{"the token resolves", "compute_secrets_resolves_total", map[string]string{"verb": "resolve", "outcome": "OK"}, 2, false},
		{"the reference checks", "compute_secrets_resolves_total", map[string]string{"verb": "check", "outcome": "OK"}, 2, false},
		{"proxmox requests", "compute_provider_http_requests_total", map[string]string{"provider": "proxmox"}, 1, false},
	}
	for _, d := range deltas {
		got := after.delta(before, d.name, d.labels)
		if got < d.atLeast || d.exactly && got != d.atLeast {
			t.Errorf("%s: %s%v moved by %v, want %v%s", d.what, d.name, d.labels, got, d.atLeast,
				map[bool]string{true: "", false: " or more"}[d.exactly])
		}
	}
	if t.Failed() {
		t.Logf("scrape after:\n%s", after.text)
	}

	// Sampled at the scrape while the instance ran.
	gauges := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"compute_instances", map[string]string{"phase": "Running"}, 1},
		{"compute_instance_conditions", map[string]string{"type": "Ready", "status": "True", "reason": "Converged"}, 1},
		{"compute_work_queue_messages", nil, 0},
		{"compute_provider_ratelimit_limit", map[string]string{"account": acct.ID}, 3600},
	}
	for _, g := range gauges {
		if v, ok := running.value(g.name, g.labels); !ok || v != g.want {
			t.Errorf("while running: %s%v = %v (found %v), want %v\n%s", g.name, g.labels, v, ok, g.want, running.text)
		}
	}
	if v, ok := running.value("compute_provider_ratelimit_remaining", map[string]string{"account": acct.ID}); !ok || v <= 0 || v > 3600 {
		t.Errorf("while running: budget remaining %v (found %v), want in (0, 3600]", v, ok)
	}

	// Route labels are templates; no label holds a tenant, an id of
	// theirs, a secret reference or a value.
	route := regexp.MustCompile(`^(/([a-z][a-z_-]*|\{[a-z]+\}))+$`)
	forbidden := []string{"acme", sec.Ref, sec.ID, "secret://", inst.ID, pool.ID, "metrics-token", pveemulator.DefaultTokenSecret}
	for key, values := range after.labelValues() {
		for _, v := range values {
			if strings.HasSuffix(key, "{route}") && !route.MatchString(v) {
				t.Errorf("%s = %q is not a route template", key, v)
			}
			for _, f := range forbidden {
				if strings.Contains(v, f) {
					t.Errorf("%s = %q holds %q", key, v, f)
				}
			}
		}
	}
	bustest.AssertNowhere(t, bustest.Scan{NC: s.nc, Dirs: []string{dir}, Logs: logs.String(), Replies: []string{before.text, running.text, after.text}},
		"metrics-token", pveemulator.DefaultTokenSecret)
}

// with is labels plus the key, value pairs kv.
func with(labels map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// proxmoxAccount registers a proxmox account on the stack's emulator.
func (c *cli) proxmoxAccount(s *stack, dataDir string) api.Account {
	c.t.Helper()
	var sec api.Secret
	c.must(&sec, pveemulator.DefaultTokenSecret, "secrets", "put", "pve")
	ca, err := os.ReadFile(filepath.Join(dataDir, proxmoxCAFile))
	if err != nil {
		c.t.Fatal(err)
	}
	config, _ := json.Marshal(map[string]any{"url": s.proxmox.URL(), "tokenId": pveemulator.DefaultTokenID,
		"tokenSecret": sec.Ref, "caCert": string(ca),
		"sizes": []map[string]any{{"name": "small", "vcpu": 2, "memoryGiB": 2, "diskGiB": 20}}})
	var acct api.Account
	c.must(&acct, "", "accounts", "create", "--provider", "proxmox", "--name", "lab", "--config", string(config))
	return acct
}

// Each service run alone by `compute serve SERVICE --metrics-addr` serves
// its own metrics: a bad request to it is counted as INVALID_INPUT under
// its service name. The pool controller, which serves no endpoint, and
// the console serve the process metrics. Tenants needs an operator-mode server (its SYS
// account): TestMetricsMoveAsTheStackWorks counts its requests.
func TestServeMetricsOfEachService(t *testing.T) {
	env := bustest.Start(t)
	cases := []struct{ serve, service, subject string }{
		{"secrets", "secrets", bus.Command("acme", bus.ResourceSecrets, "put")},
		{"accounts", "accounts", bus.Command("acme", bus.ResourceAccounts, "create")},
		{"reconciler", "reconciler", bus.Command("acme", bus.ResourceInstances, "create")},
		{"poolctl", "poolctl", ""},
		{"provider-hetzner", "provider-hetzner-cloud", bus.ProviderCall("hetzner-cloud", "create")},
		{"provider-proxmox", "provider-proxmox", bus.ProviderCall("proxmox", "create")},
		{"provider-hetzner-robot", "provider-hetzner-robot", bus.ProviderCall("hetzner-robot", "create")},
		{"console", "console", ""},
	}
	for _, name := range serviceNames() {
		if name != "tenants" && !slices.ContainsFunc(cases, func(c struct{ serve, service, subject string }) bool { return c.serve == name }) {
			t.Errorf("no case for `compute serve %s`", name)
		}
	}
	for _, tc := range cases {
		t.Run(tc.serve, func(t *testing.T) {
			url := serveWithMetrics(t, env.URL, tc.serve)
			if tc.subject == "" {
				if got := scrapeMetrics(t, url); got.families["go_goroutines"] == nil {
					t.Fatalf("compute serve %s: no process metrics; scrape:\n%s", tc.serve, got.text)
				}
				return
			}
			reply, err := env.NC.Request(tc.subject, []byte(`[]`), 5*time.Second)
			if err != nil || !strings.Contains(string(reply.Data), string(api.CodeInvalidInput)) {
				t.Fatalf("bad request to %s: %v %s", tc.subject, err, reply.Data)
			}
			got := scrapeMetrics(t, url)
			labels := map[string]string{"service": tc.service, "code": string(api.CodeInvalidInput)}
			if v, _ := got.value("compute_bus_requests_total", labels); v != 1 {
				t.Fatalf("compute_bus_requests_total%v = %v, want 1; scrape:\n%s", labels, v, got.text)
			}
		})
	}
}

// serveWithMetrics runs `compute serve SERVICE --metrics-addr 127.0.0.1:0`
// against the NATS server at natsURL until the test ends, and returns its
// scrape URL (from its "serving metrics" log line) once the service started.
func serveWithMetrics(t *testing.T, natsURL, service string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--nats", natsURL, "serve", service, "--metrics-addr", "127.0.0.1:0", //nolint:gosec // the test binary
		"--seal-key-file", filepath.Join(t.TempDir(), "seal.key"), "--allow-unsynced-store", "--console-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	url := ""
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		var line struct{ Message, URL string }
		_ = json.Unmarshal(lines.Bytes(), &line)
		switch line.Message {
		case "serving metrics":
			url = line.URL
		case "service started":
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			if url == "" {
				t.Fatalf("compute serve %s started without logging its metrics URL", service)
			}
			return url
		}
	}
	t.Fatalf("compute serve %s ended before it started", service)
	return ""
}

// `compute up` whose metrics port is taken says so in one line naming
// --metrics-addr, before anything starts.
func TestUpWithTheMetricsPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	out, status := runCompute(t, "up", "--data", t.TempDir(), "--nats-port", "0", "--hetzner-addr", "127.0.0.1:0",
		"--proxmox-addr", "127.0.0.1:0", "--metrics-addr", taken.Addr().String())
	want := "error: port " + port + " is in use: is another `compute up` running? (metrics endpoint; --metrics-addr picks another)\n"
	if status != 1 || out != want {
		t.Fatalf("compute up: exit status %d, output:\n%s\nwant exit status 1 and the one line\n%s", status, out, want)
	}
}
