package hetzner

import (
	"context"
	"sync"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// batcher gathers the concurrent lookups of one account into shared
// requests: a lookup joins the open batch, which is sent once it holds
// size lookups or window after it opened (on the clock of the call that
// opened it), and every lookup of it gets the shared answer. A lookup that
// finds no open batch opens one; so a lone lookup costs one request, as
// before, and waits window longer.
type batcher[K comparable, V any] struct {
	// window is the wait of a batch opened now (see client.batchWindow).
	window func() time.Duration
	size   int
	// fetch answers keys with one request made for call (the batch's first
	// lookup: the account's token is the same for every call of the
	// client): the value of every key it found.
	fetch func(ctx context.Context, call *provider.Call, keys []K) (map[K]V, error)

	mu   sync.Mutex
	open *batch[K, V]
}

// batch is one shared request and, once done is closed, its answer.
type batch[K comparable, V any] struct {
	keys []K
	full chan struct{} // closed when keys reached the batcher's size
	done chan struct{} // closed when got, err and the rate limit are set
	got  map[K]V
	err  error
	rl   api.RateLimit
	rlOK bool
}

// lookup joins key to the open batch (or opens one) and waits for its
// answer: the value and true, or false when the request did not return
// key. An error is each lookup's own copy. The batch's rate-limit observation is given to call, so its reply
// carries the budget like any call's. Errors: the fetch's (ComputeErrors);
// UNAVAILABLE when ctx ends first (the batch goes on for the others).
func (b *batcher[K, V]) lookup(ctx context.Context, call *provider.Call, key K) (V, bool, error) {
	var zero V
	b.mu.Lock()
	bt := b.open
	first := bt == nil
	if first {
		bt = &batch[K, V]{full: make(chan struct{}), done: make(chan struct{})}
		b.open = bt
	}
	bt.keys = append(bt.keys, key)
	if len(bt.keys) >= b.size {
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
		return zero, false, api.Errorf(api.CodeUnavailable, "hetzner-cloud: call ended while its batched lookup waited: %v", ctx.Err())
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
func (b *batcher[K, V]) send(ctx context.Context, call *provider.Call, bt *batch[K, V]) {
	select {
	case <-bt.full:
	case <-call.Clock.After(b.window()):
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
	bt.got, bt.err = b.fetch(rctx, call, keys)
	bt.rl, bt.rlOK = call.RateLimit()
	close(bt.done)
}
