package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
)

// BucketWatermarks holds the high-water mark of every guarded bucket, one
// record each (WatermarkKey): a stream of its own, so a bucket whose files
// were cut short or restored from an older backup does not take its mark
// back with it.
const BucketWatermarks = "compute_watermarks"

// watermarkTenant is the tenant token of the marks' keys: internal
// (InternalTenantPrefix).
const watermarkTenant = InternalTenantPrefix + "store"

// WatermarkKey is the KV key of bucket's mark in BucketWatermarks
// ("_store.compute_secrets"); deploy/nats.conf lets each service write the
// keys of its own buckets only.
func WatermarkKey(bucket string) string { return RecordKey(watermarkTenant, bucket) }

// Watermark is what a bucket's stream held when its owner last looked: its
// last sequence and its message count (with History 1 a KV bucket keeps one
// message per key, a delete's marker included, so neither ever goes down
// while the store is intact).
type Watermark struct {
	LastSeq uint64 `json:"lastSeq"`
	Msgs    uint64 `json:"msgs"`
}

// behind reports whether w is short of mark in either figure.
func (w Watermark) behind(mark Watermark) bool {
	return w.LastSeq < mark.LastSeq || w.Msgs < mark.Msgs
}

// Guard keeps the marks of a service's buckets (NewGuard).
type Guard struct {
	js      jetstream.JetStream
	marks   *Table[Watermark]
	buckets []string
}

// NewGuard guards buckets (names of OpenStores) with the marks in st's
// BucketWatermarks.
func NewGuard(st *Stores, buckets ...string) *Guard {
	return &Guard{js: st.JS, marks: NewTable[Watermark](st.Watermarks, "watermark"), buckets: buckets}
}

// Check compares each bucket's stream with its mark, then raises the mark
// to the stream's state. A stream behind its mark (acknowledged
// writes gone: a truncated or restored store) is refused unless acceptLoss
// (an operator's decision after a restore): then the mark is lowered to
// what the stream holds. The first check of a bucket records its mark.
// Errors: INVALID_STATE naming the bucket, both marks and the flag
// (--accept-store-loss) that accepts it; UNAVAILABLE.
func (g *Guard) Check(ctx context.Context, acceptLoss bool) (lost []string, err error) {
	for _, b := range g.buckets {
		// The mark is read before the stream's state: another replica's
		// Record in between raises the mark to a state this one has not
		// read yet, which would read as a loss.
		mark, _, err := g.marks.Get(ctx, watermarkTenant, b)
		if err != nil && !api.IsCode(err, api.CodeNotFound) {
			return lost, err
		}
		now, serr := g.state(ctx, b)
		if serr != nil {
			return lost, serr
		}
		switch {
		case api.IsCode(err, api.CodeNotFound):
		case now.behind(mark) && !acceptLoss:
			return lost, api.Errorf(api.CodeInvalidState,
				"store of %s went backwards: it holds %d messages up to sequence %d, but %d up to sequence %d were acknowledged; "+
					"acknowledged writes are lost (truncated or restored store). Restore it, or start with --accept-store-loss to serve what is left",
				b, now.Msgs, now.LastSeq, mark.Msgs, mark.LastSeq)
		case now.behind(mark):
			lost = append(lost, fmt.Sprintf("%s: %d→%d messages, sequence %d→%d", b, mark.Msgs, now.Msgs, mark.LastSeq, now.LastSeq))
		}
		// Only an accepted loss lowers the mark; otherwise it is raised
		// (a replica's newer mark is kept).
		if err := g.set(ctx, b, now, acceptLoss && now.behind(mark)); err != nil {
			return lost, err
		}
	}
	return lost, nil
}

// Record raises each bucket's mark to what its stream holds now (never
// lowers it). A service calls it while it runs and when it stops, so the
// mark trails its acknowledged writes by at most that interval. Errors:
// UNAVAILABLE, CONFLICT.
func (g *Guard) Record(ctx context.Context) error {
	for _, b := range g.buckets {
		now, err := g.state(ctx, b)
		if err != nil {
			return err
		}
		if err := g.set(ctx, b, now, false); err != nil {
			return err
		}
	}
	return nil
}

// set writes w as bucket's mark: exactly with lower, else only the figures
// that are higher than the mark's.
func (g *Guard) set(ctx context.Context, bucket string, w Watermark, lower bool) error {
	if _, _, created, err := g.marks.GetOrCreate(ctx, watermarkTenant, bucket, w); created || err != nil {
		return err
	}
	_, _, err := g.marks.Mutate(ctx, watermarkTenant, bucket, func(m *Watermark) error {
		if lower {
			*m = w
			return nil
		}
		m.LastSeq, m.Msgs = max(m.LastSeq, w.LastSeq), max(m.Msgs, w.Msgs)
		return nil
	})
	return err
}

// state reads the last sequence and message count of bucket's stream.
func (g *Guard) state(ctx context.Context, bucket string) (Watermark, error) {
	s, err := g.js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return Watermark{}, api.Errorf(api.CodeUnavailable, "stream of %s: %v", bucket, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return Watermark{}, api.Errorf(api.CodeUnavailable, "stream info of %s: %v", bucket, err)
	}
	return Watermark{LastSeq: info.State.LastSeq, Msgs: info.State.Msgs}, nil
}
