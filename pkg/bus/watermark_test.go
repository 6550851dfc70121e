package bus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// startStore runs an embedded server on dir and opens the stores.
func startStore(t *testing.T, dir string) (*server.Server, *bus.Stores) {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	st, err := bus.OpenStores(testCtx(t), nc, bus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return srv, st
}

// A store that lost acknowledged writes (its block file cut in half while
// the server was down, as in issue 20) is refused at start; a restart of an
// intact store is not, and --accept-store-loss lowers the mark once.
func TestGuardRefusesTruncatedStore(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	srv, st := startStore(t, dir)
	if _, err := bus.NewGuard(st, bus.BucketSecrets).Check(ctx, false); err != nil {
		t.Fatalf("first check: %v", err)
	}
	for i := range 400 {
		if _, err := st.Secrets.Put(ctx, fmt.Sprintf("acme.sec_%03d", i), make([]byte, 512)); err != nil {
			t.Fatal(err)
		}
	}
	if err := bus.NewGuard(st, bus.BucketSecrets).Record(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()

	// A normal restart keeps every write: no trip.
	srv, st = startStore(t, dir)
	if lost, err := bus.NewGuard(st, bus.BucketSecrets).Check(ctx, false); err != nil || len(lost) != 0 {
		t.Fatalf("check after a clean restart = %v, %v; want no loss", lost, err)
	}
	srv.Shutdown()

	blk := filepath.Join(dir, "jetstream", "$G", "streams", "KV_"+bus.BucketSecrets, "msgs", "1.blk")
	fi, err := os.Stat(blk)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(blk, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, st = startStore(t, dir)
	_, err = bus.NewGuard(st, bus.BucketSecrets).Check(ctx, false)
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidState {
		t.Fatalf("check of a truncated store = %v, want INVALID_STATE", err)
	}
	lost, err := bus.NewGuard(st, bus.BucketSecrets).Check(ctx, true)
	if err != nil || len(lost) != 1 {
		t.Fatalf("check accepting the loss = %v, %v; want the loss of %s reported", lost, err, bus.BucketSecrets)
	}
	if lost, err := bus.NewGuard(st, bus.BucketSecrets).Check(ctx, false); err != nil || len(lost) != 0 {
		t.Fatalf("check after the loss was accepted = %v, %v; want no loss", lost, err)
	}
}

// CheckSync sees a server's sync setting through a system account user,
// refuses a server that does not fsync every write, and says it cannot see
// it through an ordinary user.
func TestCheckSyncRefusesUnsyncedServer(t *testing.T) {
	for _, syncAlways := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync_always=%v", syncAlways), func(t *testing.T) {
			sys, app := server.NewAccount("SYS"), server.NewAccount("APP")
			srv, err := server.NewServer(&server.Options{
				Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
				SyncAlways: syncAlways, NoLog: true, NoSigs: true, SystemAccount: "SYS",
				Accounts: []*server.Account{sys, app},
				Users:    []*server.User{{Username: "sys", Password: "s", Account: sys}, {Username: "app", Password: "a", Account: app}},
			})
			if err != nil {
				t.Fatal(err)
			}
			srv.Start()
			t.Cleanup(srv.Shutdown)
			if !srv.ReadyForConnections(10 * time.Second) {
				t.Fatal("server not ready")
			}
			connect := func(user, pass string) *nats.Conn {
				nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(user, pass))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				return nc
			}
			err = bus.CheckSync(context.Background(), connect("sys", "s"))
			switch ce := api.AsComputeError(err); {
			case syncAlways && err != nil:
				t.Fatalf("CheckSync of a server with sync_always = %v, want nil", err)
			case !syncAlways && (ce == nil || ce.Code != api.CodeInvalidConfig || ce.Path() != "jetstream.sync_interval"):
				t.Fatalf("CheckSync of a server without sync_always = %v, want INVALID_CONFIG path jetstream.sync_interval", err)
			}
			if err := bus.CheckSync(context.Background(), connect("app", "a")); !errors.Is(err, bus.ErrSyncUnknown) {
				t.Fatalf("CheckSync through an ordinary user = %v, want ErrSyncUnknown", err)
			}
		})
	}
}
