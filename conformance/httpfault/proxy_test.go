package httpfault

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/provider"
)

// testDialect is a small API: servers under /v1.
var testDialect = Dialect{
	Ops: map[string]Route{provider.VerbCreate: "POST /servers", provider.VerbGet: "GET /servers/{id}"},
	Error: func(status int) (http.Header, []byte) {
		return http.Header{"Content-Type": {"application/json"}}, []byte(`{"error":"injected"}`)
	},
	RateLimited:  func(time.Time) (http.Header, []byte) { return nil, []byte(`{"error":"rate"}`) },
	Created:      func([]byte) string { return "7" },
	SecretFields: []string{"root_password", "user_data"},
}

// startPair starts an upstream answering every request with body and a
// proxy in front of it.
func startPair(t *testing.T, o Options, body string) *Proxy {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(up.Close)
	o.Upstream, _ = url.Parse(up.URL + "/v1")
	o.Dialect = testDialect
	p, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func do(t *testing.T, method, u, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok-secret-1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}

// TestRecordingRedactsSecrets: no Authorization header, secret field or
// secret value is recorded, and the replay answers the recorded response.
func TestRecordingRedactsSecrets(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewRecorder(dir, []string{"tok-secret-1"})
	if err != nil {
		t.Fatal(err)
	}
	p := startPair(t, Options{Record: rec}, `{"server":{"id":7},"root_password":"pw-secret-2","note":"tok-secret-1"}`)
	if status, _ := do(t, "POST", p.URL()+"/servers", `{"name":"a","user_data":"#cloud-config\npassword: ud-secret-3"}`); status != 200 {
		t.Fatalf("status %d", status)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	exchanges, err := ReadExchanges(dir)
	if err != nil || len(exchanges) != 1 {
		t.Fatalf("%d exchanges, %v", len(exchanges), err)
	}
	e := exchanges[0]
	for _, text := range []string{e.Body, e.Response} {
		for _, secret := range []string{"tok-secret-1", "pw-secret-2", "ud-secret-3", "Bearer"} {
			if strings.Contains(text, secret) {
				t.Errorf("the recording holds %q: %s", secret, text)
			}
		}
	}
	if e.Body != `{"name":"a","user_data":"[REDACTED]"}` {
		t.Errorf("recorded body %s", e.Body)
	}
	if made := p.Made(); len(made) != 1 || made[0] != "7" {
		t.Errorf("made %v, want [7]", made)
	}

	r, err := LoadReplay(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := startPair(t, Options{Replay: r}, `{"upstream":"must not answer"}`)
	if status, body := do(t, "POST", q.URL()+"/servers", `{"user_data":"other","name":"a"}`); status != 200 || !strings.Contains(body, `"root_password":"[REDACTED]"`) {
		t.Errorf("replayed %d %s", status, body)
	}
	if status, _ := do(t, "GET", q.URL()+"/servers/8", ""); status != http.StatusBadGateway {
		t.Errorf("a request not in the recording answered %d, want 502", status)
	}
	if err := q.Err(); err == nil || err.Error() != "replay diverged: request GET /v1/servers/8  is not in the recording" {
		t.Errorf("Err = %v", err)
	}
}

// TestBudget: past MaxMachines a create answers 503 without reaching the
// API and Err says so; hook requests are not counted as API calls.
func TestBudget(t *testing.T) {
	p := startPair(t, Options{MaxMachines: 1}, `{}`)
	if status, _ := do(t, "POST", p.URL()+"/servers", `{}`); status != 200 {
		t.Fatalf("first create: %d", status)
	}
	if status, _ := do(t, "POST", p.URL()+"/servers", `{}`); status != http.StatusServiceUnavailable {
		t.Errorf("second create: %d, want 503", status)
	}
	if err := p.Err(); err == nil || err.Error() != "the machine budget of 1 is spent" {
		t.Errorf("Err = %v", err)
	}
	res, err := p.HookClient().Get(p.URL() + "/servers/1")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if n, _ := p.APICalls(t.Context()); n != 2 {
		t.Errorf("APICalls = %d, want 2 (the hook's request is not one)", n)
	}
	if requests, creates := p.Spent(); requests != 2 || creates != 1 {
		t.Errorf("Spent = %d requests, %d creates; want 2, 1", requests, creates)
	}
}

// TestInjectedFaults: an armed status answers without reaching the API,
// once; the next request is forwarded.
func TestInjectedFaults(t *testing.T) {
	p := startPair(t, Options{}, `{"ok":true}`)
	if err := p.FailNext(t.Context(), provider.VerbGet, 1, 503); err != nil {
		t.Fatal(err)
	}
	if status, body := do(t, "GET", p.URL()+"/servers/1", ""); status != 503 || body != `{"error":"injected"}` {
		t.Errorf("armed: %d %s", status, body)
	}
	if status, body := do(t, "GET", p.URL()+"/servers/1", ""); status != 200 || body != `{"ok":true}` {
		t.Errorf("after: %d %s", status, body)
	}
	if err := p.FailNext(t.Context(), provider.VerbList, 1, 503); err == nil {
		t.Error("arming an op without a route succeeded")
	}
}

// A replay matches a metrics window by its parameters' names: the
// recording's start and end were other times.
func TestMatchPathIgnoresTheWindow(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/v1/servers/7/metrics?end=2026-03-01T12%3A00%3A00Z&start=2026-03-01T11%3A00%3A00Z&step=60&type=cpu",
			"/v1/servers/7/metrics?end=*&start=*&step=60&type=cpu"},
		{"/v1/servers?label_selector=a%3Db&start=notatime", "/v1/servers?label_selector=a%3Db&start=notatime"},
		{"/v1/servers/7", "/v1/servers/7"},
	} {
		if got := matchPath(c.in); got != c.want {
			t.Errorf("matchPath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
