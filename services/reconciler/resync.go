package reconciler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"better-compute.io/compute/pkg/bus"
)

// resyncLoop queues every instance every ResyncInterval (±20 % jitter).
func (r *Reconciler) resyncLoop(ctx context.Context) {
	defer r.wg.Done()
	for {
		jitter := time.Duration((rand.Float64()*0.4 - 0.2) * float64(r.o.ResyncInterval))
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.o.ResyncInterval + jitter):
		}
		if n, err := r.Resync(ctx); err != nil {
			r.log.Warn().Err(err).Msg("resync incomplete")
		} else {
			r.log.Info().Int("instances", n).Msg("resync queued")
		}
	}
}

// Resync queues work for every instance of every tenant and returns how
// many it queued. Replicas resyncing in the same ResyncInterval are
// deduplicated by message id. Errors: UNAVAILABLE (state store).
func (r *Reconciler) Resync(ctx context.Context) (int, error) {
	keys, err := bus.Keys(ctx, r.st.Instances, "")
	if err != nil {
		return 0, err
	}
	// With the periodic resync off (tests), every call queues anew.
	window := time.Now().UnixNano() / int64(max(r.o.ResyncInterval, 1))
	for _, k := range keys {
		tenant, id, ok := strings.Cut(k, ".")
		if !ok {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, enqueueTimeout)
		r.publishWork(pctx, tenant, id, fmt.Sprintf("%s-resync-%d", id, window))
		cancel()
	}
	return len(keys), nil
}
