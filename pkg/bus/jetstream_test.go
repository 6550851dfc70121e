package bus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

func TestOpenStoresIdempotent(t *testing.T) {
	env := bustest.Start(t) // opened once
	ctx := testCtx(t)
	if _, err := bus.NewTable[rec](env.Stores.Accounts, "rec").Create(ctx, "acme", "pacct_1", rec{N: 7}); err != nil {
		t.Fatal(err)
	}
	st, err := bus.OpenStores(ctx, env.NC, bus.StoreOptions{})
	if err != nil {
		t.Fatalf("second OpenStores: %v", err)
	}
	if got, _, err := bus.NewTable[rec](st.Accounts, "rec").Get(ctx, "acme", "pacct_1"); err != nil || got.N != 7 {
		t.Fatalf("record after reopening: %+v, %v", got, err)
	}
	buckets := map[string]jetstream.KeyValue{
		bus.BucketSecrets: st.Secrets, bus.BucketAccounts: st.Accounts, bus.BucketPools: st.Pools,
		bus.BucketInstances: st.Instances, bus.BucketIdempotency: st.Idempotency,
	}
	for name, kv := range buckets {
		status, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ttl := time.Duration(0)
		if name == bus.BucketIdempotency {
			ttl = bus.IdempotencyTTL
		}
		if status.Bucket() != name || status.History() != 1 || status.TTL() != ttl || status.BackingStore() != "JetStream" {
			t.Errorf("bucket %s: name %s history %d ttl %v", name, status.Bucket(), status.History(), status.TTL())
		}
	}
	for _, name := range []string{bus.StreamWork, bus.StreamEvents} {
		s, err := st.JS.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		if cfg := s.CachedInfo().Config; cfg.Storage != jetstream.FileStorage || cfg.Replicas != 1 ||
			cfg.PersistMode != jetstream.AsyncPersistMode {
			t.Errorf("stream %s: storage %v replicas %d persist mode %v (want file, 1, async)", name, cfg.Storage, cfg.Replicas, cfg.PersistMode)
		}
	}
	for name := range buckets { // the records: synced before every acknowledgement
		s, err := st.JS.Stream(ctx, "KV_"+name)
		if err != nil {
			t.Fatal(err)
		}
		if mode := s.CachedInfo().Config.PersistMode; mode != jetstream.DefaultPersistMode {
			t.Errorf("bucket %s: persist mode %v, want default", name, mode)
		}
	}
	if !st.WorkFlushedAsync() {
		t.Error("WorkFlushedAsync is false on a single server")
	}
}

// A work or events stream made before the streams were async (synced)
// keeps its persist mode: nats-server refuses to change it, and opening
// the stores must not fail on that.
func TestStreamMadeBeforeKeepsItsPersistMode(t *testing.T) {
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := bus.Connect(bus.ConnectOptions{URL: srv.ClientURL(), Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx := testCtx(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: bus.StreamWork, Subjects: []string{bus.WorkRoot + ".>"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	st, err := bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err != nil {
		t.Fatalf("OpenStores over a synced work stream: %v", err)
	}
	if st.WorkFlushedAsync() {
		t.Error("WorkFlushedAsync is true, the stream is synced")
	}
	want := map[string]jetstream.PersistModeType{bus.StreamWork: jetstream.DefaultPersistMode, bus.StreamEvents: jetstream.AsyncPersistMode}
	for name, mode := range want {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if cfg := s.CachedInfo().Config; cfg.PersistMode != mode || cfg.MaxMsgsPerSubject != maxMsgsPerSubject(name) {
			t.Errorf("stream %s: persist mode %v, max per subject %d; want %v, %d (updated to the configuration otherwise)",
				name, cfg.PersistMode, cfg.MaxMsgsPerSubject, mode, maxMsgsPerSubject(name))
		}
	}
}

// maxMsgsPerSubject is what OpenStores configures for the stream.
func maxMsgsPerSubject(stream string) int64 {
	if stream == bus.StreamWork {
		return 1
	}
	return -1
}

func TestWorkStreamKeepsOnePerSubject(t *testing.T) {
	env := bustest.Start(t)
	ctx, js := testCtx(t), env.Stores.JS
	for _, body := range []string{"1", "2", "3"} {
		if _, err := js.Publish(ctx, bus.Work("acme", "inst_a"), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := js.Stream(ctx, bus.StreamWork)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("messages after 3 publishes to one subject: %d, %v", info.State.Msgs, err)
	}
	last, err := stream.GetLastMsgForSubject(ctx, bus.Work("acme", "inst_a"))
	if err != nil || string(last.Data) != "3" {
		t.Fatalf("kept message %q, %v; want the newest", last.Data, err)
	}

	msg := nats.NewMsg(bus.Work("acme", "inst_b"))
	msg.Data = []byte("b")
	msg.Header.Set(jetstream.MsgIDHeader, "inst_b-gen-1")
	for i, wantDup := range []bool{false, true} {
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil || ack.Duplicate != wantDup {
			t.Fatalf("publish %d with one Nats-Msg-Id: duplicate %v, %v", i, ack.Duplicate, err)
		}
	}
	if info, err := stream.Info(ctx); err != nil || info.State.Msgs != 2 {
		t.Fatalf("messages on two subjects: %d, %v", info.State.Msgs, err)
	}

	if _, err := js.Publish(ctx, bus.Event("acme", "instances", "inst_a", "status"), []byte("{}")); err != nil {
		t.Fatalf("publish an event: %v", err)
	}
	events, err := js.Stream(ctx, bus.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := events.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("events kept: %d, %v", info.State.Msgs, err)
	}
}

func TestStartEmbedded(t *testing.T) {
	if _, err := bus.StartEmbedded(bus.EmbeddedOptions{}); err == nil || err.Error() != "embedded nats: StoreDir is required" {
		t.Fatalf("StartEmbedded without StoreDir = %v", err)
	}
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir(), Name: "unit"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	if srv.Name() != "unit" || !srv.JetStreamEnabled() {
		t.Fatalf("server %q, jetstream %v", srv.Name(), srv.JetStreamEnabled())
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

// Against a server without JetStream, OpenStores gives up when its context
// ends and says why the last attempt failed, not only that time ran out.
func TestOpenStoresWithoutJetStreamSaysWhy(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(5 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = bus.OpenStores(ctx, nc, bus.StoreOptions{})
	if err == nil || !strings.Contains(err.Error(), "last attempt") {
		t.Fatalf("OpenStores without JetStream: %v, want the last attempt's failure", err)
	}
	t.Logf("%v", err)
}
