package emulator

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tplID is the template every test server is seeded with.
const tplID = 9000

// testTemplate is the seeded template.
func testTemplate() Template {
	return Template{VMID: tplID, Name: "ubuntu-24-04", DiskGiB: 10, Cores: 2, MemoryMiB: 2048,
		Tags: "Base,ubuntu", Description: "golden image\n",
		Config: map[string]string{"ipconfig0": "ip=dhcp", "cicustom": "user=local:snippets/user.yaml"}}
}

// startServer starts an emulator with the test template (and opts'
// settings) and closes it when the test ends.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Templates == nil {
		opts.Templates = []Template{testTemplate()}
	}
	s, err := Start(opts)
	noErr(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// pinnedTLS is a TLS config trusting only s's CA.
func pinnedTLS(t *testing.T, s *Server) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CACertPEM()) {
		t.Fatal("CA PEM does not parse")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// pinnedClient is an HTTP client trusting only s's CA.
func pinnedClient(t *testing.T, s *Server) *http.Client {
	t.Helper()
	return &http.Client{Transport: &http.Transport{TLSClientConfig: pinnedTLS(t, s)}, Timeout: 10 * time.Second}
}

// reply is a decoded API reply.
type reply struct {
	status int
	reason string // the reason phrase after the code
	raw    string
	body   map[string]any
}

// data is the reply's "data".
func (r reply) data() any { return r.body["data"] }

// dataMap is the reply's "data" as an object.
func (r reply) dataMap(t *testing.T) map[string]any {
	t.Helper()
	m, ok := r.body["data"].(map[string]any)
	if !ok {
		t.Fatalf("data is not an object: %d %s %s", r.status, r.reason, r.raw)
	}
	return m
}

// upid is the reply's "data" as a UPID string.
func (r reply) upid(t *testing.T) string {
	t.Helper()
	s, ok := r.body["data"].(string)
	if r.status != http.StatusOK || !ok {
		t.Fatalf("want a UPID, got %d %s %s", r.status, r.reason, r.raw)
	}
	return s
}

// tester drives one server over HTTPS with the default token.
type tester struct {
	t      *testing.T
	s      *Server
	client *http.Client
	auth   string
}

// newTester returns a tester for s.
func newTester(t *testing.T, s *Server) *tester {
	return &tester{t: t, s: s, client: pinnedClient(t, s), auth: "PVEAPIToken=" + DefaultTokenID + "=" + DefaultTokenSecret}
}

// do sends a form-encoded API call.
func (x *tester) do(method, path string, form url.Values) reply {
	x.t.Helper()
	var body io.Reader
	target := x.s.URL() + path
	if form != nil && (method == http.MethodPost || method == http.MethodPut) {
		body = strings.NewReader(form.Encode())
	} else if form != nil {
		target += "?" + form.Encode()
	}
	req, err := http.NewRequest(method, target, body)
	noErr(x.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return x.send(req)
}

// doJSON sends an API call with a JSON body.
func (x *tester) doJSON(method, path string, payload any) reply {
	x.t.Helper()
	b, err := json.Marshal(payload)
	noErr(x.t, err)
	req, err := http.NewRequest(method, x.s.URL()+path, bytes.NewReader(b))
	noErr(x.t, err)
	req.Header.Set("Content-Type", "application/json")
	return x.send(req)
}

// send adds the token, sends req and decodes the reply.
func (x *tester) send(req *http.Request) reply {
	x.t.Helper()
	if x.auth != "" {
		req.Header.Set("Authorization", x.auth)
	}
	resp, err := x.client.Do(req)
	noErr(x.t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	noErr(x.t, err)
	r := reply{status: resp.StatusCode, raw: string(raw), reason: strings.TrimSpace(strings.TrimPrefix(resp.Status, resp.Status[:3]))}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			x.t.Fatalf("body %q: %v", raw, err)
		}
	}
	return r
}

// task reads a task's status.
func (x *tester) task(upid string) map[string]any {
	x.t.Helper()
	return x.do(http.MethodGet, "/nodes/pve1/tasks/"+upid+"/status", nil).dataMap(x.t)
}

// exit reads a finished task's exit status, failing if it still runs.
func (x *tester) exit(upid string) string {
	x.t.Helper()
	st := x.task(upid)
	if st["status"] != "stopped" {
		x.t.Fatalf("task still running: %v", st)
	}
	return st["exitstatus"].(string)
}

// clone clones the template to newid and waits for the task.
func (x *tester) clone(newid int, name string) {
	x.t.Helper()
	form := url.Values{"newid": {strconv.Itoa(newid)}, "full": {"1"}}
	if name != "" {
		form.Set("name", name)
	}
	upid := x.do(http.MethodPost, "/nodes/pve1/qemu/9000/clone", form).upid(x.t)
	equal(x.t, x.exit(upid), "OK", "clone exit status")
}

// config reads a VM's config.
func (x *tester) config(vmid int) map[string]any {
	x.t.Helper()
	return x.do(http.MethodGet, "/nodes/pve1/qemu/"+strconv.Itoa(vmid)+"/config", nil).dataMap(x.t)
}

// ctx is a test context with a deadline.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// noErr fails the test now on err.
func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// equal reports got != want as an error.
func equal(t *testing.T, got, want any, what string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// mustEqual stops the test when got != want.
func mustEqual(t *testing.T, got, want any, what string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %#v, want %#v", what, got, want)
	}
}

// isErrorReply checks an error reply's status, reason phrase and message
// (modern style).
func isErrorReply(t *testing.T, r reply, status int, msg string) {
	t.Helper()
	if r.status != status || r.reason != msg || r.body["message"] != msg+"\n" {
		t.Errorf("reply = %d %q %s, want %d %q with that message", r.status, r.reason, r.raw, status, msg)
	}
}
