package bus

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
)

// jszSubject asks every nats-server for its JetStream report (nats-server
// v2.15.2 server/events.go, "JSZ"), whose data.config is the server's
// JetStreamConfig. Only a user of the system account may ask: an ordinary
// account sees no JetStream setting of the server ($JS.API.INFO reports its
// own usage and limits only).
const jszSubject = "$SYS.REQ.SERVER.PING.JSZ"

// syncCheckTimeout bounds the JSZ request: a user without the permission
// gets no answer at all.
const syncCheckTimeout = 2 * time.Second

// ErrSyncUnknown is CheckSync's error when the connection may not see the
// server's settings (no system account user): the check cannot be made.
var ErrSyncUnknown = errors.New("cannot see whether nats-server fsyncs every write: " +
	"only a system account user may ask ($SYS.REQ.SERVER.PING.JSZ)")

// CheckSync asks the server nc is connected to (the first to answer, on a
// cluster) whether JetStream fsyncs every write (sync_interval: always, or
// server.Options.SyncAlways). Errors: INVALID_CONFIG naming
// jetstream.sync_interval when it does not; ErrSyncUnknown when nobody
// answers (see jszSubject).
func CheckSync(ctx context.Context, nc *nats.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, syncCheckTimeout)
	defer cancel()
	reply, err := nc.RequestWithContext(ctx, jszSubject, nil)
	if err != nil {
		return ErrSyncUnknown
	}
	var jsz struct {
		Server struct {
			Name string `json:"name"`
		} `json:"server"`
		Data *struct {
			Config struct {
				SyncAlways bool `json:"sync_always"`
			} `json:"config"`
		} `json:"data"`
	}
	if err := json.Unmarshal(reply.Data, &jsz); err != nil || jsz.Data == nil {
		return ErrSyncUnknown
	}
	if !jsz.Data.Config.SyncAlways {
		return api.InvalidConfig("jetstream.sync_interval",
			"nats-server %s does not fsync every write: an acknowledged write can be lost in a crash; "+
				"set sync_interval: always in its jetstream block (or start with --allow-unsynced-store for development)",
			jsz.Server.Name)
	}
	return nil
}
