package provider

import (
	"context"
	"sync"
	"time"

	"better-compute.io/compute/pkg/api"
)

// Batcher gathers the concurrent lookups of one account (a client's gets,
// task or action polls) into shared requests: a lookup joins the open
// batch, which is sent once it holds Size lookups or Window after it
// opened (on the clock of the call that opened it), and every lookup of it
// gets the shared answer. A lookup that finds no open batch opens one; so
// a lone lookup costs one request, and waits Window longer. The zero
// value is unusable: set Window, Size and Fetch before the first Lookup,
// and change none of them after it.
type Batcher[K comparable, V any] struct {
	// Window is the wait of a batch opened now.
	Window func() time.Duration
	// Size is the most lookups one batch holds (at least 1).
	Size int
	// Fetch answers keys with one shared request (or a few) made for call,
	// the batch's first lookup (a client's calls share its account, so any
	// of them can resolve the account's secrets): the value of every key it
	// found. Its error answers every lookup of the batch.
	Fetch func(ctx context.Context, call *Call, keys []K) (map[K]V, error)

	mu   sync.Mutex
	open *batch[K, V]
}

// batch is one shared request and, once done is closed, its answer.
type batch[K comparable, V any] struct {
	keys []K
	full chan struct{} // closed when keys reached the Batcher's Size
	done chan struct{} // closed when got, err and the rate limit are set
	got  map[K]V
	err  error
	rl   api.RateLimit
	rlOK bool
}

// Lookup joins key to the open batch (or opens one) and waits for its
// answer: the value and true, or false when the fetch did not return key.
// The batch's rate-limit observation (Call.RateLimit of the call that
// opened it) is given to call, so its reply carries the budget like any
// call's. Errors: the fetch's, as each lookup's own *api.ComputeError
// copy; UNAVAILABLE when ctx ends first (the batch goes on for the
// others).
func (b *Batcher[K, V]) Lookup(ctx context.Context, call *Call, key K) (V, bool, error) {
	var zero V
	b.mu.Lock()
	bt := b.open
	first := bt == nil
	if first {
		bt = &batch[K, V]{full: make(chan struct{}), done: make(chan struct{})}
		b.open = bt
	}
	bt.keys = append(bt.keys, key)
	if len(bt.keys) >= b.Size {
		b.open = nil
		close(bt.full)
	}
	b.mu.Unlock()
	if first {
		go b.send(ctx, call, bt)
	}
	select {
	case <-bt.done:
	case <-ctx.Done():
		return zero, false, api.Errorf(api.CodeUnavailable, "call ended while its batched lookup waited: %v", ctx.Err())
	}
	if bt.rlOK {
		call.ObserveRateLimit(bt.rl)
	}
	if bt.err != nil {
		ce := *api.AsComputeError(bt.err) // each lookup's own copy: callers may amend theirs
		return zero, false, &ce
	}
	v, found := bt.got[key]
	return v, found, nil
}

// send sends bt once it is full or its window passed. The request keeps
// the deadline of the call that opened the batch but not its
// cancellation: it answers every lookup of the batch.
func (b *Batcher[K, V]) send(ctx context.Context, call *Call, bt *batch[K, V]) {
	select {
	case <-bt.full:
	case <-call.Clock.After(b.Window()):
	}
	b.mu.Lock()
	if b.open == bt {
		b.open = nil
	}
	keys := bt.keys
	b.mu.Unlock()
	rctx := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(rctx, deadline)
		defer cancel()
	}
	bt.got, bt.err = b.Fetch(rctx, call, keys)
	bt.rl, bt.rlOK = call.RateLimit()
	close(bt.done)
}
