package reconciler

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// held is a work message a replica fetched and has not finished: its
// heartbeats run until stopHeartbeat.
type held struct {
	msg           jetstream.Msg
	stopHeartbeat func()
	// release gives back the message's place among its tenant's waiting
	// messages (when a worker takes it, or it is handed back).
	release func()
}

// fairQueue holds the work messages a replica fetched and no worker has
// started yet, per tenant, and hands them out one tenant at a time in
// turn: round-robin over the tenants with a message waiting, so a tenant
// with thousands queued and a tenant with one alternate. Each tenant's
// puller bounds what it buffers here (pull). After close, every message
// waiting and every one pushed is handed back (Nak).
type fairQueue struct {
	mu     sync.Mutex
	ring   []string // tenants with a message waiting, in turn order
	msgs   map[string][]held
	wake   chan struct{} // closed (and replaced) when a message is pushed
	closed bool
}

func newFairQueue() *fairQueue {
	return &fairQueue{msgs: map[string][]held{}, wake: make(chan struct{})}
}

// push queues m as the tenant's latest; after close it hands m back.
func (q *fairQueue) push(tenant string, m held) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		_ = m.msg.Nak()
		m.stopHeartbeat()
		m.release()
		return
	}
	if len(q.msgs[tenant]) == 0 {
		q.ring = append(q.ring, tenant)
	}
	q.msgs[tenant] = append(q.msgs[tenant], m)
	close(q.wake)
	q.wake = make(chan struct{})
	q.mu.Unlock()
}

// next waits for a message and returns the oldest of the tenant whose turn
// it is, its place released (its heartbeats run on); false once ctx has
// ended.
func (q *fairQueue) next(ctx context.Context) (held, bool) {
	for ctx.Err() == nil {
		q.mu.Lock()
		if len(q.ring) > 0 {
			tenant := q.ring[0]
			q.ring = q.ring[1:]
			waiting := q.msgs[tenant]
			m := waiting[0]
			if len(waiting) == 1 {
				delete(q.msgs, tenant)
			} else {
				q.msgs[tenant] = waiting[1:]
				q.ring = append(q.ring, tenant) // its next turn comes after every other tenant's
			}
			q.mu.Unlock()
			m.release()
			return m, true
		}
		wake := q.wake
		q.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-wake:
		}
	}
	return held{}, false
}

// close hands every waiting message back (another replica takes it now,
// not after AckWait) and makes push do the same from now on.
func (q *fairQueue) close() {
	q.mu.Lock()
	waiting := q.msgs
	q.closed, q.msgs, q.ring = true, map[string][]held{}, nil
	q.mu.Unlock()
	for _, ms := range waiting {
		for _, m := range ms {
			_ = m.msg.Nak()
			m.stopHeartbeat()
			m.release()
		}
	}
}
