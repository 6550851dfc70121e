package hetzner

import (
	"context"
	"testing"

	"better-compute.io/compute/pkg/api"
)

// Delete by key (delete.byKey) deletes the server carrying the key, with
// one key lookup and one DELETE, leaves other keys' servers alone, counts
// a server already deleting as requested (no second DELETE), and answers
// NOT_FOUND once no server carries the key, or for a key never used.
func TestDeleteByKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	mine := e.create(t, "inst_mine", "mine")
	other := e.create(t, "inst_other", "other")
	e.clock.Advance(10 * testActionDuration) // the create actions end
	e.emu.ResetCalls()

	if err := e.client.DeleteByKey(ctx, e.call("inst_mine"), "inst_mine"); err != nil {
		t.Fatalf("delete by key: %v", err)
	}
	if got := e.emu.Calls("DELETE /servers/{id}"); got != 1 {
		t.Fatalf("DELETE /servers/{id} sent %d times, want 1", got)
	}
	if got := e.calls(); got != 2 {
		t.Fatalf("delete by key made %d requests, want 2 (lookup, delete)", got)
	}
	if m := e.mustGet(t, mine.ID); m == nil || m.State != api.StateDeleting {
		t.Fatalf("server %s after the delete: %+v, want deleting", mine.ID, m)
	}
	if err := e.client.DeleteByKey(ctx, e.call("inst_mine"), "inst_mine"); err != nil {
		t.Fatalf("delete by key while deleting: %v", err)
	}
	if got := e.emu.Calls("DELETE /servers/{id}"); got != 1 {
		t.Fatalf("a deleting server was deleted again: %d DELETEs", got)
	}
	e.clock.Advance(10 * testActionDuration)
	for _, key := range []string{"inst_mine", "inst_never"} {
		if err := e.client.DeleteByKey(ctx, e.call(key), key); !api.IsCode(err, api.CodeNotFound) {
			t.Fatalf("delete by key %s with no server carrying it: %v, want NOT_FOUND", key, err)
		}
	}
	if m := e.mustGet(t, other.ID); m == nil || m.State == api.StateDeleting {
		t.Fatalf("another key's server %s: %+v, want untouched", other.ID, m)
	}
}
