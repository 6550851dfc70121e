package live_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/httpfault"
	"better-compute.io/compute/conformance/live"
)

// shipped is the recording made against the emulator, shipped with the
// repository (docs/writing-a-provider.md says how it was made).
const shipped = "testdata/hetzner-cloud"

// replay certifies from the recording in dir as the CLI does: its run
// file's choices, no API and no credential.
func replay(t *testing.T, dir string, only []string) (*conformance.Report, *live.Env) {
	t.Helper()
	run, err := live.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := live.Start(ctx, run.ProviderID, live.Options{Replay: dir, PollInterval: 25 * time.Millisecond})
	if err != nil {
		t.Fatalf("start the replay: %v", err)
	}
	t.Cleanup(func() { _ = env.Close() })
	s := env.Subject
	s.Profiles, s.OfferID, s.Image, s.Prefix, s.ScaleMachines = run.Profiles, run.OfferID, run.Image, run.Prefix, run.ScaleMachines
	report, err := conformance.Certify(t.Context(), s, conformance.Options{Seed: run.Seed, Only: only})
	if err != nil {
		t.Fatal(err)
	}
	return report, env
}

// scan fails t if the recording in dir holds any of secrets, a bearer
// token, or a secret field whose value is not redacted.
func scan(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	exchanges, err := httpfault.ReadExchanges(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(exchanges) == 0 {
		t.Fatalf("the recording in %s is empty", dir)
	}
	for i, e := range exchanges {
		line, _ := json.Marshal(e)
		text := string(line)
		for _, s := range append(secrets, "Bearer ") {
			if strings.Contains(text, s) {
				t.Errorf("exchange %d (%s %s) holds a secret value", i+1, e.Method, e.Path)
			}
		}
		for _, body := range []string{e.Body, e.Response} {
			if field, value, ok := unredacted(body); ok {
				t.Errorf("exchange %d (%s %s): field %s is %.8q…, want %s", i+1, e.Method, e.Path, field, value, httpfault.Redacted)
			}
		}
	}
}

// unredacted finds a secret field (root_password, user_data, token,
// password) of a JSON body whose value is neither null nor redacted.
func unredacted(body string) (field, value string, ok bool) {
	var v any
	if json.Unmarshal([]byte(body), &v) != nil {
		return "", "", false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for k, item := range x {
				switch k {
				case "root_password", "user_data", "token", "password":
					if s, isString := item.(string); isString && s != httpfault.Redacted {
						field, value = k, s
						return true
					}
				}
				if walk(item) {
					return true
				}
			}
		case []any:
			for _, item := range x {
				if walk(item) {
					return true
				}
			}
		}
		return false
	}
	return field, value, walk(v)
}

// TestShippedRecordingReplays: the shipped recording certifies core,
// cloud, faults, durable and scale with no API at all, and holds no
// secret.
func TestShippedRecordingReplays(t *testing.T) {
	scan(t, shipped)
	report, env := replay(t, shipped, nil)
	if report.Verdict != conformance.VerdictCertified {
		t.Errorf("verdict %s (failed %v, incomplete %v)", report.Verdict, report.WithStatus(conformance.Failed), report.WithStatus(conformance.Incomplete))
	}
	if err := env.Proxy.Err(); err != nil {
		t.Errorf("replay: %v", err)
	}
}

// TestRecordThenReplay records a core run against the emulator, scans the
// recording for the token, stops the emulator and certifies from the
// recording; a recording with one request changed fails naming the
// request the provider sent.
func TestRecordThenReplay(t *testing.T) {
	apiURL, srv := realAPI(t)
	dir := t.TempDir()
	env := startLive(t, live.Options{APIURL: apiURL, Record: dir})
	env.Subject.Profiles = []string{conformance.ProfileCore}
	report, err := conformance.Certify(t.Context(), env.Subject, conformance.Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if report.Verdict != conformance.VerdictCertified {
		t.Fatalf("recorded run: verdict %s", report.Verdict)
	}
	if err := env.WriteRun(live.Run{ProviderID: "hetzner-cloud", OfferID: env.Subject.OfferID, Image: env.Subject.Image,
		Profiles: report.Profiles, Prefix: report.Prefix, Seed: report.Seed}); err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	_ = srv.Close()
	scan(t, dir, os.Getenv(tokenEnv))

	report, renv := replay(t, dir, nil)
	if report.Verdict != conformance.VerdictCertified || renv.Proxy.Err() != nil {
		t.Fatalf("replay: verdict %s, %v", report.Verdict, renv.Proxy.Err())
	}

	tampered := t.TempDir()
	exchanges, err := httpfault.ReadExchanges(dir)
	if err != nil {
		t.Fatal(err)
	}
	changed := ""
	for i, e := range exchanges {
		if e.Method == "POST" && strings.HasSuffix(e.Path, "/servers") {
			changed = e.Body
			exchanges[i].Body = strings.Replace(e.Body, report.Prefix, "tampered", 1)
			break
		}
	}
	if changed == "" {
		t.Fatal("the recording has no create")
	}
	if err := httpfault.WriteExchanges(tampered, exchanges); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, live.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tampered, live.RunFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	report, tenv := replay(t, tampered, nil)
	err = tenv.Proxy.Err()
	if report.Verdict == conformance.VerdictCertified || err == nil {
		t.Fatalf("tampered replay: verdict %s, error %v; want a failure", report.Verdict, err)
	}
	want := "replay diverged: request POST /v1/servers " + changed[:100]
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("tampered replay: error %q, want one naming the request: %s…", err, want)
	}
}

// TestLivePort: Options.Port (--port, make PORT=…) is the port of the
// fault layer, the provider's endpoint.
func TestLivePort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := live.Start(ctx, "hetzner-cloud", live.Options{Replay: shipped, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Close() }()
	if want := "http://127.0.0.1:" + strconv.Itoa(port) + "/v1"; env.Proxy.URL() != want {
		t.Errorf("the fault layer is at %s, want %s", env.Proxy.URL(), want)
	}
}
