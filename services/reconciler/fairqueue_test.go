package reconciler

import (
	"context"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// namedMsg is a work message known by its subject; Nak records the hand-back.
type namedMsg struct {
	jetstream.Msg
	subject string
	naked   *[]string
}

func (m namedMsg) Subject() string { return m.subject }
func (m namedMsg) Nak() error      { *m.naked = append(*m.naked, m.subject); return nil }

// The fair queue hands out one tenant's oldest message at a time, tenants
// in turn; every place is released when a worker takes the message, and
// close hands back what waits (and what is pushed later).
func TestFairQueueTakesTenantsInTurn(t *testing.T) {
	q := newFairQueue()
	var naked []string
	released := 0
	push := func(tenant, subject string) {
		q.push(tenant, "", held{msg: namedMsg{subject: subject, naked: &naked}, stopHeartbeat: func() {}, release: func() { released++ }})
	}
	for _, s := range []string{"a1", "a2", "a3", "a4"} {
		push("acme", s)
	}
	push("globex", "g1")
	push("initech", "i1")
	push("globex", "g2")
	var got []string
	for range 5 {
		m, ok := q.next(context.Background())
		if !ok {
			t.Fatal("next: nothing")
		}
		got = append(got, m.msg.Subject())
	}
	if want := []string{"a1", "g1", "i1", "a2", "g2"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if released != 5 {
		t.Fatalf("%d places released after 5 taken, want 5", released)
	}
	q.close()
	push("globex", "g3")
	if want := []string{"a3", "a4", "g3"}; !slices.Equal(naked, want) || released != 8 {
		t.Fatalf("handed back %v (%d places released), want %v (8)", naked, released, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := q.next(ctx); ok {
		t.Fatal("next after close and cancel returned a message")
	}
}

// Within a tenant, its provider accounts take the tenant's turns in turn:
// a flood on one account is passed by another account's one message at
// its tenant's next turn, and tenants still alternate.
func TestFairQueueTakesAccountsInTurn(t *testing.T) {
	q := newFairQueue()
	var naked []string
	push := func(tenant, account, subject string) {
		q.push(tenant, account, held{msg: namedMsg{subject: subject, naked: &naked}, stopHeartbeat: func() {}, release: func() {}})
	}
	for _, s := range []string{"a1", "a2", "a3", "a4"} {
		push("acme", "pacct_a", s)
	}
	push("acme", "pacct_b", "b1")
	push("globex", "pacct_g", "g1")
	push("acme", "", "legacy1")
	var got []string
	for range 7 {
		m, ok := q.next(context.Background())
		if !ok {
			t.Fatal("next: nothing")
		}
		got = append(got, m.msg.Subject())
	}
	if want := []string{"a1", "g1", "b1", "legacy1", "a2", "a3", "a4"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
