package authtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"better-compute.io/compute/pkg/bus"
)

// Each stateful service may keep the high-water marks of its own buckets
// (docs/operations.md) and no other's; none may see the server's sync
// setting (bus.CheckSync), which only a system account user could.
func TestServicesKeepOnlyTheirOwnMarks(t *testing.T) {
	s := startStack(t)
	own := map[string][]string{
		"secrets":    {bus.BucketSecrets},
		"accounts":   {bus.BucketAccounts, bus.BucketPools},
		"reconciler": {bus.BucketInstances},
		"tenants":    {bus.BucketTenants},
		"poolctl":    {bus.BucketPoolControl},
	}
	for user, buckets := range own {
		nc := s.ServiceConn(t, user, "_INBOX_svc_"+user)
		st := s.OpenStores(t, nc)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := bus.NewGuard(st, buckets...).Check(ctx, false); err != nil {
			t.Errorf("%s checking its own marks: %v", user, err)
		}
		if err := bus.NewGuard(st, buckets...).Record(ctx); err != nil {
			t.Errorf("%s recording its own marks: %v", user, err)
		}
		cancel()
		for other, theirs := range own {
			if other == user {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if _, err := bus.NewGuard(st, theirs[0]).Check(ctx, true); err == nil {
				t.Errorf("%s wrote the mark of %s's bucket %s", user, other, theirs[0])
			}
			cancel()
		}
		if err := bus.CheckSync(context.Background(), nc); !errors.Is(err, bus.ErrSyncUnknown) {
			t.Errorf("CheckSync as %s = %v, want ErrSyncUnknown", user, err)
		}
	}
}
