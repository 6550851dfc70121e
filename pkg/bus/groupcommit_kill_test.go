package bus_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// groupServerEnv holds "<store dir>|<port>" for TestGroupCommitServerChild.
const groupServerEnv = "COMPUTE_TEST_GROUP_COMMIT_SERVER"

// TestGroupCommitServerChild is not a test: it is the nats-server process
// TestGroupCommitSurvivesServerKills starts and kills (it skips unless
// asked to run).
func TestGroupCommitServerChild(t *testing.T) {
	dir, port, ok := strings.Cut(os.Getenv(groupServerEnv), "|")
	if !ok {
		t.Skip("the server process of TestGroupCommitSurvivesServerKills")
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: dir, Port: p}); err != nil {
		t.Fatal(err)
	}
	select {} // until SIGKILL
}

// nats-server is SIGKILLed three times while 64 writers create records
// in one bucket, which commits them in atomic batches; each time it is
// started again on the same store. Every create that was answered with a
// revision is then stored, at that revision, with its value.
func TestGroupCommitSurvivesServerKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills nats-server processes")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	child := &bustest.Child{Test: "TestGroupCommitServerChild",
		Env: []string{fmt.Sprintf("%s=%s|%d", groupServerEnv, t.TempDir(), port)}}
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)

	var mu sync.Mutex
	acked := map[string]uint64{} // key → the revision its create was answered
	var batches int64
	for kill := range 3 {
		child.Start(t)
		nc, err := nats.Connect(url, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
		cancel()
		if err != nil {
			t.Fatalf("open stores after %d kills: %v", kill, err)
		}
		var n atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 64 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					key := fmt.Sprintf("acme.k%d-w%d-%d", kill, w, i)
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					rev, err := st.Instances.Create(ctx, key, []byte(key))
					cancel()
					if err == nil {
						mu.Lock()
						acked[key] = rev
						mu.Unlock()
						n.Add(1)
					}
				}
			})
		}
		bustest.WaitFor(t, "2,000 creates answered", func() bool { return n.Load() >= 2000 })
		child.Kill()
		close(stop)
		wg.Wait()
		batches += st.CreateBatches()
		nc.Close()
	}
	if batches == 0 {
		t.Fatal("no create went in a batch: the test shows nothing of the group commit")
	}

	child.Start(t)
	nc, err := nats.Connect(url, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for key, rev := range acked {
		e, err := st.Instances.Get(ctx, key)
		if err != nil || e.Revision() != rev || string(e.Value()) != key {
			if lost++; lost <= 5 {
				t.Errorf("%s answered at revision %d, stored: %v (%v)", key, rev, e, err)
			}
		}
	}
	t.Logf("%d creates answered across 3 kills (%d batches): %d lost", len(acked), batches, lost)
	if lost > 0 {
		t.Errorf("%d of %d answered creates lost", lost, len(acked))
	}
}
