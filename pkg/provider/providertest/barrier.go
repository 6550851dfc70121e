package providertest

import (
	"net/http"
	"sync"
)

// Barrier is an HTTP transport that holds the replies to requests matching
// its match function until n of them are answered, then hands them all
// back: concurrent calls then all have their reply to that request before
// any goes on. Base sends the requests (nil: http.DefaultTransport); set it
// before the first request.
type Barrier struct {
	Base     http.RoundTripper
	match    func(*http.Request) bool
	n        int
	mu       sync.Mutex
	answered int
	release  chan struct{}
}

// NewBarrier returns a Barrier for n replies to requests matching match.
func NewBarrier(n int, match func(*http.Request) bool) *Barrier {
	return &Barrier{match: match, n: n, release: make(chan struct{})}
}

// RoundTrip implements http.RoundTripper. A held request whose context ends
// gets the context's error (its reply body closed).
func (b *Barrier) RoundTrip(req *http.Request) (*http.Response, error) {
	base := b.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil || !b.match(req) {
		return resp, err
	}
	b.mu.Lock()
	b.answered++
	if b.answered == b.n {
		close(b.release)
	}
	b.mu.Unlock()
	select {
	case <-b.release:
		return resp, nil
	case <-req.Context().Done():
		_ = resp.Body.Close()
		return nil, req.Context().Err()
	}
}
