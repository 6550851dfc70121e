package proxmox

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"sync"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// maxErrorBody bounds how much of an error reply is read.
const maxErrorBody = 1 << 20

// accountHTTPClient is the HTTP client of one account: base (the option's
// client) as it is, or, when the account pins a CA, with a clone of its
// *http.Transport that trusts only that CA. Errors: INVALID_CONFIG naming
// config.caCert (unparsable PEM, or a transport that cannot be pinned).
func accountHTTPClient(base *http.Client, caPEM string) (*http.Client, error) {
	if caPEM == "" {
		return base, nil
	}
	pool, err := certPool(caPEM)
	if err != nil {
		return nil, err
	}
	var tr *http.Transport
	switch t := base.Transport.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		tr = t.Clone()
	default:
		return nil, api.InvalidConfig("config."+FieldCACert,
			"caCert cannot be pinned into the HTTP client given with WithHTTPClient (its transport is %T, not *http.Transport)", t)
	}
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{}
	}
	tr.TLSClientConfig.RootCAs = pool
	tr.TLSClientConfig.MinVersion = max(tr.TLSClientConfig.MinVersion, tls.VersionTLS12)
	out := *base
	out.Transport = tr
	return &out, nil
}

// recorder is the HTTP transport of one session: it counts requests and
// keeps the failure of the last reply. It is what lets the Telmate calls
// report PVE's message on PVE before 8.3, whose error replies carry it
// only in the HTTP reason phrase (body {"data":null}), which the Telmate
// client drops (its ApiError keeps the status code only).
type recorder struct {
	base  http.RoundTripper
	mu    sync.Mutex
	calls int
	fail  *pveError
	// changes counts the requests that can change something (not a GET)
	// and may have: sent, not refused (see pveError.refused), and not
	// starting a task that then refused (see taskRefused).
	changes int
}

// RoundTrip implements http.RoundTripper. A non-2xx reply's body is read
// (at most maxErrorBody bytes) and handed on unchanged.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.calls++
	r.fail = nil
	r.mu.Unlock()
	resp, err := r.base.RoundTrip(req)
	changing := req.Method != http.MethodGet
	if err != nil || resp.StatusCode/100 == 2 {
		if changing && !(err != nil && provider.Unsent(err)) {
			r.mu.Lock()
			r.changes++
			r.mu.Unlock()
		}
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	f := httpFailure(resp.StatusCode, resp.Status, body)
	r.mu.Lock()
	r.fail = f
	if changing && !f.refused() {
		r.changes++
	}
	r.mu.Unlock()
	return resp, nil
}

// taskRefused records that the task a counted request started refused
// before acting (its failure is a refusal kind).
func (r *recorder) taskRefused() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = max(r.changes-1, 0)
}

// untouched reports whether no request of the session may have changed
// anything (see recorder.changes).
func (r *recorder) untouched() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changes == 0
}

// count is the number of requests sent so far.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// failure is the failure of the last reply (nil when it succeeded or no
// reply came).
func (r *recorder) failure() *pveError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fail
}
