package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"

	"better-compute.io/compute/pkg/api"
)

// EventBufferSize is how many events a session keeps for the timelines.
const EventBufferSize = 500

// subscriberBuffer is how many events an event stream may lag behind
// before events are dropped for it (the page re-reads its state on the
// next one, so a drop loses no state).
const subscriberBuffer = 64

// session is one signed-in browser: its tenant's connection, its CSRF
// token and the events it received.
type session struct {
	token  string // the cookie value
	csrf   string // the token every POST of the session must carry
	tenant Tenant
	stop   func() // ends the events subscription

	mu       sync.Mutex
	lastSeen time.Time
	events   []api.Event // oldest first, at most EventBufferSize
	subs     map[chan api.Event]struct{}
	closed   bool
	// lastChart is the metrics chart the session drew last (chartFor).
	lastChart struct {
		id string
		at time.Time
		c  chart
	}
}

// chartFor is the chart of instance id: the one this session drew at most
// chartMaxAge before now, else draw's, kept for the next page (a live
// page re-renders on every event of the tenant; each chart is a provider
// API request on the account's rate-limit budget).
func (s *session) chartFor(id string, now time.Time, draw func() chart) chart {
	s.mu.Lock()
	last := s.lastChart
	s.mu.Unlock()
	if last.id == id && now.Sub(last.at) < chartMaxAge {
		return last.c
	}
	c := draw()
	s.mu.Lock()
	s.lastChart.id, s.lastChart.at, s.lastChart.c = id, now, c
	s.mu.Unlock()
	return c
}

// newToken is 32 random bytes, base64url-encoded.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// tokensEqual compares two tokens in constant time.
func tokensEqual(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// record keeps ev and hands it to every event stream of the session. An
// event of another tenant is dropped: the subscription is the tenant's
// own, so none should come, but a page must never show one.
func (s *session) record(ev api.Event) {
	if ev.TenantID != s.tenant.ID() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if len(s.events) == EventBufferSize {
		s.events = append(s.events[:0], s.events[1:]...)
	}
	s.events = append(s.events, ev)
	for ch := range s.subs {
		select {
		case ch <- ev:
		default: // lagging stream: its page re-reads everything on the next event
		}
	}
}

// eventsOf returns the recorded events of resource id ("" for all),
// newest first.
func (s *session) eventsOf(id string) []api.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []api.Event
	for i := len(s.events) - 1; i >= 0; i-- {
		if id == "" || s.events[i].ResourceID == id {
			out = append(out, s.events[i])
		}
	}
	return out
}

// subscribe returns a channel of the session's events from now on,
// closed when the session ends; cancel stops it.
func (s *session) subscribe() (ch chan api.Event, cancel func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch = make(chan api.Event, subscriberBuffer)
	if s.closed {
		close(ch)
		return ch, func() {}
	}
	s.subs[ch] = struct{}{}
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.subs[ch]; ok {
			delete(s.subs, ch)
			close(ch)
		}
	}
}

// touch records activity at now; it reports false when the session has
// been idle longer than idle (it is then over).
func (s *session) touch(now time.Time, idle time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || now.Sub(s.lastSeen) > idle {
		return false
	}
	s.lastSeen = now
	return true
}

// idleSince reports whether the session's last activity is older than
// idle at now.
func (s *session) idleSince(now time.Time, idle time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return now.Sub(s.lastSeen) > idle
}

// close ends the session: its event streams, subscription and connection.
func (s *session) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for ch := range s.subs {
		close(ch)
	}
	s.subs = nil
	s.mu.Unlock()
	s.stop()
	s.tenant.Close()
}

// sessions are the signed-in sessions by token.
type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

func (ss *sessions) get(token string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.m[token]
}

// add keeps s unless max sessions are held already. Errors:
// UNAVAILABLE then.
func (ss *sessions) add(s *session, max int) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.m) >= max {
		return api.Errorf(api.CodeUnavailable, "the console holds its maximum of %d sessions: try again later", max)
	}
	ss.m[s.token] = s
	return nil
}

// remove forgets and closes the session of token (if any).
func (ss *sessions) remove(token string) {
	ss.mu.Lock()
	s := ss.m[token]
	delete(ss.m, token)
	ss.mu.Unlock()
	if s != nil {
		s.close()
	}
}

// expire closes every session idle longer than idle at now.
func (ss *sessions) expire(now time.Time, idle time.Duration) {
	ss.mu.Lock()
	var idleOnes []*session
	for tok, s := range ss.m {
		if s.idleSince(now, idle) {
			idleOnes = append(idleOnes, s)
			delete(ss.m, tok)
		}
	}
	ss.mu.Unlock()
	for _, s := range idleOnes {
		s.close()
	}
}

// closeAll closes every session.
func (ss *sessions) closeAll() {
	ss.mu.Lock()
	all := ss.m
	ss.m = map[string]*session{}
	ss.mu.Unlock()
	for _, s := range all {
		s.close()
	}
}
