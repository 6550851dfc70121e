package provider

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
)

// neverClock's waits never end: a batch is sent only when full.
type neverClock struct{ clock.Real }

func (neverClock) After(time.Duration) <-chan time.Time { return nil }

// Concurrent lookups share fetches of Size keys; a lone one is fetched
// after the window; a missing key answers false; a failed fetch answers
// every lookup with its own copy of the error; a lookup whose context
// ends is UNAVAILABLE.
func TestBatcher(t *testing.T) {
	var fetches atomic.Int32
	fail := atomic.Bool{}
	b := &Batcher[int, int]{Window: func() time.Duration { return time.Millisecond }, Size: 10,
		Fetch: func(_ context.Context, _ *Call, keys []int) (map[int]int, error) {
			fetches.Add(1)
			if fail.Load() {
				return nil, api.Errorf(api.CodeProviderError, "down")
			}
			out := map[int]int{}
			for _, k := range keys {
				if k%7 != 0 {
					out[k] = k * 2
				}
			}
			return out, nil
		}}
	held := &Call{Clock: neverClock{}}
	var wg sync.WaitGroup
	for k := 1; k <= 30; k++ {
		wg.Go(func() {
			v, found, err := b.Lookup(t.Context(), held, k)
			if err != nil || found != (k%7 != 0) || found && v != 2*k {
				t.Errorf("lookup %d: %d, %v, %v", k, v, found, err)
			}
		})
	}
	wg.Wait()
	if n := fetches.Load(); n != 3 {
		t.Fatalf("30 lookups in batches of 10 fetched %d times, want 3", n)
	}

	if v, found, err := b.Lookup(t.Context(), &Call{Clock: clock.Real{}}, 5); err != nil || !found || v != 10 {
		t.Fatalf("lone lookup: %d, %v, %v", v, found, err)
	}

	fail.Store(true)
	b.Size = 2 // a fresh batch: the two lookups below share one
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = b.Lookup(t.Context(), held, i+1) })
	}
	wg.Wait()
	for _, err := range errs {
		if !api.IsCode(err, api.CodeProviderError) {
			t.Fatalf("failed fetch answered %v", err)
		}
	}
	if n := fetches.Load(); n != 5 || errs[0] == errs[1] {
		t.Fatalf("%d fetches; the two lookups of one batch got errors %p and %p, want one fetch and two copies", n, errs[0], errs[1])
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := b.Lookup(ctx, held, 1); !api.IsCode(err, api.CodeUnavailable) {
		t.Fatalf("ended context: %v, want UNAVAILABLE", err)
	}
}
