package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// tap sees every reply the run's connection receives, through a
// subscription to that connection's response inbox on a connection of its
// own (on the same connection it would take the no-responders statuses
// the server sends to one subscription only), and looks for secret values
// in bodies and headers as they pass. It keeps counts and where a value
// was seen, never the value.
type tap struct {
	nc      *nats.Conn
	sub     *nats.Subscription
	secrets [][]byte

	mu      sync.Mutex
	replies int
	bytes   int
	leaks   []string
}

// maxLeaksKept bounds the leak descriptions a tap keeps.
const maxLeaksKept = 20

// startTap connects with nc's options and subscribes to nc's response
// inbox (_INBOX.<id>.*, where nc.Request replies arrive).
func startTap(nc *nats.Conn, secrets []string) (*tap, error) {
	t := &tap{secrets: secretForms(secrets)}
	opts := nc.Opts
	opts.Name = "conformance-tap"
	var err error
	if t.nc, err = opts.Connect(); err != nil {
		return nil, fmt.Errorf("conformance: connect the reply tap: %w", err)
	}
	inbox := nc.NewRespInbox()
	prefix := inbox[:strings.LastIndexByte(inbox, '.')+1]
	if t.sub, err = t.nc.Subscribe(prefix+"*", t.see); err == nil {
		err = t.nc.Flush()
	}
	if err != nil {
		t.nc.Close()
		return nil, fmt.Errorf("conformance: tap replies on %s*: %w", prefix, err)
	}
	_ = t.sub.SetPendingLimits(-1, -1)
	return t, nil
}

// secretForms are the byte strings a secret value may travel as: itself
// and its JSON-escaped form.
func secretForms(secrets []string) [][]byte {
	var out [][]byte
	for _, s := range secrets {
		if s == "" {
			continue
		}
		out = append(out, []byte(s))
		if q, err := json.Marshal(s); err == nil && string(q[1:len(q)-1]) != s {
			out = append(out, q[1:len(q)-1])
		}
	}
	return out
}

// see scans one reply.
func (t *tap) see(m *nats.Msg) {
	where := ""
	if containsAny(m.Data, t.secrets) {
		where = "body"
	}
	for k, vs := range m.Header {
		for _, v := range vs {
			if containsAny([]byte(v), t.secrets) {
				where = "header " + k
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.replies++
	t.bytes += len(m.Data)
	if where != "" && len(t.leaks) < maxLeaksKept {
		t.leaks = append(t.leaks, fmt.Sprintf("reply #%d (%s)", t.replies, where))
	}
}

// stats reports the replies seen, their bytes and where secrets leaked.
func (t *tap) stats() (replies, size int, leaks []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.replies, t.bytes, append([]string(nil), t.leaks...)
}

// settle waits, for at most 5 s, until the replies received so far are
// scanned.
func (t *tap) settle() {
	_ = t.nc.Flush()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n, _, err := t.sub.Pending(); err != nil || n == 0 {
			return
		}
	}
}

// stop closes the tap's connection once the replies received are seen.
func (t *tap) stop() {
	t.settle()
	t.nc.Close()
}

// containsAny reports whether data holds one of needles.
func containsAny(data []byte, needles [][]byte) bool {
	for _, n := range needles {
		if bytes.Contains(data, n) {
			return true
		}
	}
	return false
}
