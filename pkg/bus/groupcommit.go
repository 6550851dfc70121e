package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Group commit of a bucket's creates.
//
// The servers this package runs (StartEmbedded) and asks for (CheckSync)
// sync every message to disk before acknowledging it, one message after
// the other per stream, so one-message publishes take a bucket at most as
// many creates per second as the disk takes fsyncs: 2,063 a second on the
// machine of docs/benchmarks.md on 2026-12-02, with a keyed instance create
// writing two records. An atomic batch (nats-server 2.12 and later, stream
// option allow_atomic, ADR-50) is checked as a whole against the stream and
// stored at once; on a single server with sync always its messages are
// synced together, so a batch of 64 costs about what 5 single messages
// cost. A bucket whose stream allows atomic batches (openBucket: the
// buckets of a single server) gathers the creates that wait while others
// are being written and, from groupMin on, commits them as one batch; a
// lone create, or a few at once, are single publishes as before.
const (
	// groupMin is the fewest waiting creates sent as one batch: a batch
	// has a fixed cost (nats-server stages it in a file store of its own)
	// of about 16 single messages on this machine.
	groupMin = 16
	// groupAlone is how many creates run alone at once. The stream stores
	// them one after the other anyway; a few at once keep the server busy,
	// more would only hold the stream between batches.
	groupAlone = 8
	// groupMax bounds a batch (nats-server's max_batch_size is 1,000 by
	// default).
	groupMax = 256
	// groupTimeout bounds a batch's commit (its caller's own deadlines
	// do not apply to the others' writes).
	groupTimeout = 5 * time.Second
)

// The headers of an atomic batch publish (ADR-50); nats.go has no names for
// them.
const (
	batchIDHeader     = "Nats-Batch-Id"
	batchSeqHeader    = "Nats-Batch-Sequence"
	batchCommitHeader = "Nats-Batch-Commit"
)

// validKeyChars is nats.go's pattern for a KV key's characters.
var validKeyChars = regexp.MustCompile(`^[-/_=\.a-zA-Z0-9]+$`)

// validKey is nats.go's rule for a KV key (jetstream keyValid): a create
// of any other key goes alone, so that nats.go refuses it as it would.
func validKey(key string) bool {
	return key != "" && key[0] != '.' && key[len(key)-1] != '.' && !strings.Contains(key, "..") &&
		validKeyChars.MatchString(key)
}

// batchOverhead bounds what a batch message carries beyond a single
// create's: the batch's three headers (id, sequence, commit).
const batchOverhead = 256

// groupMaxBytes bounds a batch's values (a batch of 256 records of 200
// KiB took 2.2 s to commit on this machine: a large one would outlast
// groupTimeout though stored).
const groupMaxBytes = 8 << 20

// pendingCreate is one create waiting for its group's commit.
type pendingCreate struct {
	ctx   context.Context
	key   string
	value []byte
	rev   uint64
	err   error
	done  chan struct{}
}

// finish answers p's caller.
func (p *pendingCreate) finish(rev uint64, err error) {
	p.rev, p.err = rev, err
	close(p.done)
}

// groupCommit commits the creates of one bucket (see above). Up to
// groupAlone creates run alone at once, each as soon as it comes; a create
// that finds them all running, or others waiting, waits. One leader
// goroutine at a time sends what waits: groupMin or more as one atomic
// batch, or, when a create alone ends first, the next waiting ones alone.
type groupCommit struct {
	kv     jetstream.KeyValue // the bucket's plain handle: creates alone
	nc     *nats.Conn
	prefix string // "$KV.<bucket>."

	mu      sync.Mutex
	moved   *sync.Cond // on mu: a create came to wait, or one alone ended
	waiting []*pendingCreate
	alone   int // creates alone under way
	leading bool

	// off is set when a commit's answer was not an atomic batch's: the
	// server does not batch, and every create goes alone from then on.
	off atomic.Bool
	// batches counts the batches committed (tests and benchmarks).
	batches atomic.Int64
}

// newGroupCommit is the group commit of kv, a bucket whose stream allows
// atomic batches, publishing on nc.
func newGroupCommit(nc *nats.Conn, kv jetstream.KeyValue) *groupCommit {
	g := &groupCommit{kv: kv, nc: nc, prefix: "$KV." + kv.Bucket() + "."}
	g.moved = sync.NewCond(&g.mu)
	return g
}

// create is kv.Create(ctx, key, value) through the group commit: it
// returns the new revision, or the error kv.Create would (a key that
// exists: jetstream.ErrKeyExists), or ctx's error, or, when the batch it
// went in was not answered, an error saying so (its outcome is unknown,
// as that of a single create that timed out).
func (g *groupCommit) create(ctx context.Context, key string, value []byte) (uint64, error) {
	if !g.groupable(key, value) {
		return g.kv.Create(ctx, key, value) // as nats.go alone would answer it
	}
	g.mu.Lock()
	if len(g.waiting) == 0 && g.alone < groupAlone {
		g.alone++
		g.mu.Unlock()
		defer g.aloneEnded()
		return g.kv.Create(ctx, key, value)
	}
	p := &pendingCreate{ctx: ctx, key: key, value: value, done: make(chan struct{})}
	g.waiting = append(g.waiting, p)
	if !g.leading {
		g.leading = true
		go g.lead()
	}
	g.moved.Signal()
	g.mu.Unlock()
	select {
	case <-p.done:
		return p.rev, p.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// groupable reports whether a create of key may go in a batch: the group
// commit is on, nats.go would take the key, and the value fits a batch
// message (its headers are larger than a create's alone).
func (g *groupCommit) groupable(key string, value []byte) bool {
	return !g.off.Load() && validKey(key) && len(key)+len(value)+batchOverhead <= int(g.nc.MaxPayload())
}

// aloneEnded counts a create alone as ended and wakes the leader.
func (g *groupCommit) aloneEnded() {
	g.mu.Lock()
	g.alone--
	g.moved.Signal()
	g.mu.Unlock()
}

// lead sends the waiting creates until none waits: as one batch when
// groupMin or more wait, else alone as soon as creates alone end.
func (g *groupCommit) lead() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		for len(g.waiting) > 0 && len(g.waiting) < groupMin && g.alone >= groupAlone {
			g.moved.Wait()
		}
		n := len(g.waiting)
		if n == 0 {
			g.leading = false
			return
		}
		if n < groupMin {
			n = min(n, groupAlone-g.alone)
			g.alone += n
			for _, p := range g.waiting[:n] {
				go func() {
					p.finish(g.kv.Create(p.ctx, p.key, p.value))
					g.aloneEnded()
				}()
			}
			g.waiting = slices.Clone(g.waiting[n:])
			continue
		}
		take := g.waiting[:batchSize(g.waiting)]
		g.waiting = slices.Clone(g.waiting[len(take):])
		g.mu.Unlock()
		g.batch(take)
		g.mu.Lock()
	}
}

// batchSize is how many of the first creates of waiting go in one batch:
// at most groupMax, and at most groupMaxBytes of values (at least one).
func batchSize(waiting []*pendingCreate) int {
	n, size := 0, 0
	for n < len(waiting) && n < groupMax && (n == 0 || size+len(waiting[n].value) <= groupMaxBytes) {
		size += len(waiting[n].value)
		n++
	}
	return n
}

// batch commits take (groupMin creates or more, fewer when their values
// reach groupMaxBytes) as one atomic batch, or, when the server refuses
// the batch as a whole, each alone, groupAlone at once (the stream stores
// them one after the other anyway; more at once would only queue them in
// the connection and the server). Creates whose callers left are not
// written.
func (g *groupCommit) batch(take []*pendingCreate) {
	take = slices.DeleteFunc(take, func(p *pendingCreate) bool {
		if err := p.ctx.Err(); err != nil {
			p.finish(0, err)
			return true
		}
		return false
	})
	if len(take) > 0 && g.commit(take) {
		return
	}
	var wg sync.WaitGroup
	turns := make(chan struct{}, groupAlone)
	for _, p := range take {
		turns <- struct{}{}
		wg.Go(func() {
			defer func() { <-turns }()
			p.finish(g.kv.Create(p.ctx, p.key, p.value))
		})
	}
	wg.Wait()
}

// batchAck is the answer to a batch's commit: the stream's sequence of its
// last message, the batch and its count, or the server's error.
type batchAck struct {
	Sequence uint64              `json:"seq"`
	Batch    string              `json:"batch"`
	Count    int                 `json:"count"`
	Error    *jetstream.APIError `json:"error"`
}

// commit sends take as one atomic batch, each message expecting its key
// to have no message yet (a create), and answers every create of it. It
// returns false, having answered none, when the server refused the batch
// as a whole before storing any of it: a key that exists (or holds a
// delete marker, which kv.Create writes over), two creates of one key,
// atomic batches turned off on the stream meanwhile, too many batches in
// flight; the caller then writes them one by one, which gives each its
// own answer. A commit not answered in groupTimeout may have been
// stored: each create then gets an error.
func (g *groupCommit) commit(take []*pendingCreate) bool {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	id := nuid.Next()
	var reply *nats.Msg
	for i, p := range take {
		m := nats.NewMsg(g.prefix + p.key)
		m.Data = p.value
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
		m.Header.Set(batchIDHeader, id)
		m.Header.Set(batchSeqHeader, strconv.Itoa(i+1))
		if i < len(take)-1 {
			if err := g.nc.PublishMsg(m); err != nil {
				return false // never committed: the server drops the batch
			}
			continue
		}
		m.Header.Set(batchCommitHeader, "1")
		var err error
		if reply, err = g.nc.RequestMsgWithContext(ctx, m); notSent(err) {
			return false // the commit never reached the stream: nothing stored
		} else if err != nil {
			g.answerAll(take, fmt.Errorf("batch commit: %w", err))
			return true
		}
	}
	var ack batchAck
	if err := json.Unmarshal(reply.Data, &ack); err != nil {
		g.answerAll(take, fmt.Errorf("batch commit: undecodable answer: %w", err))
		return true
	}
	if ack.Error != nil {
		return false
	}
	if ack.Batch != id || ack.Count != len(take) || ack.Sequence < uint64(len(take)) {
		// Not a batch's answer: the messages may have been stored one by
		// one, each checked alone. Batches stop here.
		g.off.Store(true)
		g.answerAll(take, fmt.Errorf("batch commit: the server did not commit an atomic batch (answer %q)", reply.Data))
		return true
	}
	g.batches.Add(1)
	// The batch's messages are stored one after the other, the last at
	// ack.Sequence.
	first := ack.Sequence - uint64(len(take)) + 1
	for i, p := range take {
		p.finish(first+uint64(i), nil)
	}
	return true
}

// notSent reports whether err says a request never reached a stream
// (refused by the client before sending, or no stream listens on its
// subject), so that nothing of the batch it committed was stored.
func notSent(err error) bool {
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrReconnectBufExceeded) ||
		errors.Is(err, nats.ErrBadSubject)
}

// answerAll answers every create of take with err.
func (g *groupCommit) answerAll(take []*pendingCreate, err error) {
	for _, p := range take {
		p.finish(0, err)
	}
}
