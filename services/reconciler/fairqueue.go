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
	// release gives back the message's place among its consumer's waiting
	// messages (when a worker takes it, or it is handed back).
	release func()
}

// fairQueue holds the work messages a replica fetched and no worker has
// started yet, per tenant and, within a tenant, per provider account, and
// hands them out round-robin at both levels: tenants with a message
// waiting take turns, and each tenant's turn goes to its accounts in turn,
// the oldest message of the account whose turn it is. So a tenant with
// thousands queued and a tenant with one alternate, and so do a tenant's
// account with thousands queued and its account with one. Each
// consumer's puller bounds what it buffers here (pull). After close, every
// message waiting and every one pushed is handed back (Nak).
type fairQueue struct {
	mu      sync.Mutex
	tenants []string // tenants with a message waiting, in turn order
	of      map[string]*tenantQueue
	wake    chan struct{} // closed (and replaced) when a message is pushed
	closed  bool
}

// tenantQueue is one tenant's waiting messages by account ("" for work
// queued under the subjects without an account, before the upgrade).
type tenantQueue struct {
	accounts []string // accounts with a message waiting, in turn order
	msgs     map[string][]held
}

func newFairQueue() *fairQueue {
	return &fairQueue{of: map[string]*tenantQueue{}, wake: make(chan struct{})}
}

// push queues m as the latest of the tenant's account; after close it
// hands m back.
func (q *fairQueue) push(tenant, account string, m held) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		_ = m.msg.Nak()
		m.stopHeartbeat()
		m.release()
		return
	}
	tq := q.of[tenant]
	if tq == nil {
		tq = &tenantQueue{msgs: map[string][]held{}}
		q.of[tenant] = tq
		q.tenants = append(q.tenants, tenant)
	}
	if len(tq.msgs[account]) == 0 {
		tq.accounts = append(tq.accounts, account)
	}
	tq.msgs[account] = append(tq.msgs[account], m)
	close(q.wake)
	q.wake = make(chan struct{})
	q.mu.Unlock()
}

// next waits for a message and returns the oldest of the account whose
// turn it is within the tenant whose turn it is, its place released (its
// heartbeats run on); false once ctx has ended.
func (q *fairQueue) next(ctx context.Context) (held, bool) {
	for ctx.Err() == nil {
		q.mu.Lock()
		if len(q.tenants) > 0 {
			m := q.take()
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

// take removes the next message in turn; q.mu is held and a tenant waits.
// A tenant (an account) with more waiting gets its next turn after every
// other tenant's (every other account's of the tenant).
func (q *fairQueue) take() held {
	tenant := q.tenants[0]
	q.tenants = q.tenants[1:]
	tq := q.of[tenant]
	account := tq.accounts[0]
	tq.accounts = tq.accounts[1:]
	waiting := tq.msgs[account]
	m := waiting[0]
	if len(waiting) == 1 {
		delete(tq.msgs, account)
	} else {
		tq.msgs[account] = waiting[1:]
		tq.accounts = append(tq.accounts, account)
	}
	if len(tq.accounts) == 0 {
		delete(q.of, tenant)
	} else {
		q.tenants = append(q.tenants, tenant)
	}
	return m
}

// close hands every waiting message back (another replica takes it now,
// not after AckWait) and makes push do the same from now on.
func (q *fairQueue) close() {
	q.mu.Lock()
	waiting := q.of
	q.closed, q.of, q.tenants = true, map[string]*tenantQueue{}, nil
	q.mu.Unlock()
	for _, tq := range waiting {
		for _, ms := range tq.msgs {
			for _, m := range ms {
				_ = m.msg.Nak()
				m.stopHeartbeat()
				m.release()
			}
		}
	}
}
