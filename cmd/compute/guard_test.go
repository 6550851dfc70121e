package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// A service whose bucket holds less than its mark says was acknowledged
// does not start (INVALID_STATE, `compute serve` exits 1) unless
// --accept-store-loss; then it starts, and so does the next, plain start.
func TestServiceRefusesStoreBehindItsMark(t *testing.T) {
	env := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	marks := bus.NewTable[bus.Watermark](env.Stores.Watermarks, "watermark")
	tenant, id, _ := bus.SplitKey(bus.WatermarkKey(bus.BucketAccounts))
	if _, err := marks.Create(ctx, tenant, id, bus.Watermark{LastSeq: 1000, Msgs: 1000}); err != nil {
		t.Fatal(err)
	}
	c := &serviceConfig{log: zerolog.Nop(), resyncInterval: -1, sealKeyFile: filepath.Join(t.TempDir(), "seal.key")}
	_, err := runServices(env.NC, env.Stores, c, []string{"accounts"})
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidState {
		t.Fatalf("start on a store behind its mark = %v, want INVALID_STATE", err)
	}
	for _, accept := range []bool{true, false} {
		c.acceptStoreLoss = accept
		stop, err := runServices(env.NC, env.Stores, c, []string{"accounts"})
		if err != nil {
			t.Fatalf("start with acceptStoreLoss=%v: %v", accept, err)
		}
		stop()
	}
}
