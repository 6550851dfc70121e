package hetzner

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
)

// Field failure 1: a server for key K exists but its id was lost.
func TestCreateFindsServerOfKey(t *testing.T) {
	e := newEnv(t)
	first := e.create(t, "inst_01k", "inst_01k")
	e.emu.ResetCalls()
	again := e.create(t, "inst_01k", "inst_01k")
	if again.ID != first.ID {
		t.Fatalf("create returned server %s, want the existing %s", again.ID, first.ID)
	}
	if n := e.emu.Calls("POST /servers"); n != 0 {
		t.Fatalf("create sent %d POST /servers, want none", n)
	}
	if n := len(e.emu.Servers()); n != 1 {
		t.Fatalf("%d servers exist, want 1", n)
	}
}

// Field failure 2: the API commits a create but the reply is lost.
func TestCreateAfterDroppedReply(t *testing.T) {
	e := newEnv(t)
	e.emu.DropResponseNext("POST /servers", 1)
	_, err := e.client.Create(context.Background(), e.call("inst_02k"), api.MachineSpec{Name: "inst_02k", OfferID: "cx23", Image: "ubuntu-24.04"})
	providertest.WantProviderError(t, err, 0, codeUnreachable)
	m := e.create(t, "inst_02k", "inst_02k")
	servers := e.emu.Servers()
	if len(servers) != 1 || strconv.FormatInt(servers[0].ID, 10) != m.ID {
		t.Fatalf("servers = %+v, want exactly the one the retry returned (%s)", servers, m.ID)
	}
	if n := e.emu.Calls("POST /servers"); n != 1 {
		t.Fatalf("%d POST /servers, want 1 (the retry must find the committed server)", n)
	}
}

// Field failure 3a: two creates race for one name with different keys.
func TestCreateNameRaceDifferentKeys(t *testing.T) {
	e := newEnv(t, WithHTTPClient(&http.Client{Transport: providertest.NewBarrier(2, isKeyLookup)}))
	results := raceCreates(e, []string{"inst_03a", "inst_03b"}, "web-1")
	var won, lost int
	for _, r := range results {
		switch r.err {
		case nil:
			won++
		default:
			providertest.WantProviderError(t, r.err, http.StatusConflict, "uniqueness_error")
			lost++
		}
	}
	if won != 1 || lost != 1 {
		t.Fatalf("won %d, lost %d; want one of each", won, lost)
	}
	servers := e.emu.Servers()
	if len(servers) != 1 {
		t.Fatalf("%d servers, want 1", len(servers))
	}
	if n := e.emu.Calls("POST /servers"); n != 2 {
		t.Fatalf("%d POST /servers, want 2 (both must have raced)", n)
	}
}

// A taken name's refusal names the holder when it is a managed server
// (its id, key and state: the caller waits for a holder being deleted),
// and names none for a server made by another tool.
func TestTakenNameNamesAManagedHolder(t *testing.T) {
	e := newEnv(t)
	old := e.create(t, "inst_04old", "w1")
	e.clock.Advance(testActionDuration) // running
	if err := e.client.Delete(context.Background(), e.call("inst_04old"), old.ID); err != nil {
		t.Fatal(err)
	}
	foreign := e.emu.SeedServers(1, "console", nil)[0]
	foreignName := e.emu.Servers()[1].Name

	for _, tc := range []struct {
		name       string
		wantHolder api.NameHolder
		wantNamed  bool
	}{
		{"w1", api.NameHolder{ID: old.ID, IdempotencyKey: "inst_04old", State: string(api.StateDeleting)}, true},
		{foreignName, api.NameHolder{}, false},
	} {
		_, err := e.client.Create(context.Background(), e.call("inst_04new"), api.MachineSpec{Name: tc.name, OfferID: "cx23", Image: "ubuntu-24.04"})
		ce := providertest.WantProviderError(t, err, http.StatusConflict, "uniqueness_error")
		holder, named := ce.NameHolder()
		if named != tc.wantNamed || holder != tc.wantHolder {
			t.Errorf("create %s (server %d is the console's): holder %+v, %v; want %+v, %v", tc.name, foreign, holder, named, tc.wantHolder, tc.wantNamed)
		}
	}
}

// A holder whose delete ends between the 409 and the lookup leaves the
// name free: the refusal says so (holder state deleted, no id).
func TestTakenNameFreedBeforeTheLookup(t *testing.T) {
	var e *env
	e = newEnv(t, WithHTTPClient(&http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusConflict {
			e.clock.Advance(testActionDuration) // the holder's delete action ends
		}
		return resp, err
	})}))
	old := e.create(t, "inst_05old", "w1")
	e.clock.Advance(testActionDuration)
	if err := e.client.Delete(context.Background(), e.call("inst_05old"), old.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.client.Create(context.Background(), e.call("inst_05new"), api.MachineSpec{Name: "w1", OfferID: "cx23", Image: "ubuntu-24.04"})
	ce := providertest.WantProviderError(t, err, http.StatusConflict, "uniqueness_error")
	if holder, named := ce.NameHolder(); !named || holder != (api.NameHolder{State: string(api.StateDeleted)}) {
		t.Fatalf("holder %+v, %v; want one in state deleted, without an id", holder, named)
	}
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Field failure 3b: two creates of the same key race: both POST, the loser
// adopts the winner because it carries its key.
func TestCreateRaceSameKey(t *testing.T) {
	e := newEnv(t, WithHTTPClient(&http.Client{Transport: providertest.NewBarrier(2, isKeyLookup)}))
	results := raceCreates(e, []string{"inst_03c", "inst_03c"}, "web-2")
	for _, r := range results {
		if r.err != nil {
			t.Fatalf("create: %v", r.err)
		}
	}
	if results[0].m.ID != results[1].m.ID {
		t.Fatalf("creates returned servers %s and %s, want the same", results[0].m.ID, results[1].m.ID)
	}
	if n := len(e.emu.Servers()); n != 1 {
		t.Fatalf("%d servers, want 1", n)
	}
	if n := e.emu.Calls("POST /servers"); n != 2 {
		t.Fatalf("%d POST /servers, want 2 (both must have raced)", n)
	}
}

type createResult struct {
	m   *api.ExternalMachine
	err error
}

// raceCreates runs one create per key at once, all named name.
func raceCreates(e *env, keys []string, name string) []createResult {
	out := make([]createResult, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() {
			m, err := e.client.Create(context.Background(), e.call(key), api.MachineSpec{Name: name, OfferID: "cx23", Image: "ubuntu-24.04"})
			out[i] = createResult{m, err}
		})
	}
	wg.Wait()
	return out
}

// Field failure 4: the project's rate budget is empty, reset in 30 s.
func TestRateLimited(t *testing.T) {
	e := newEnv(t)
	e.emu.SetRateLimit(0, testStart.Add(30*time.Second))
	e.emu.ResetCalls()
	_, err := e.client.Get(context.Background(), e.call(""), "1")
	ce := providertest.WantCode(t, err, api.CodeRateLimited)
	if d := ce.RetryAfter() - 30*time.Second; d < -time.Second || d > time.Second {
		t.Fatalf("retryAfter = %v, want 30s ± 1s", ce.RetryAfter())
	}
	if n := e.calls(); n != 1 {
		t.Fatalf("%d HTTP requests, want exactly 1 (no retries)", n)
	}
}

// Field failure 5: deprecation and availability per location.
func TestOffersPerLocation(t *testing.T) {
	e := newEnv(t)
	e.emu.Deprecate("cx33", "fsn1")
	e.emu.SetAvailability("cpx22", "fsn1", false)
	ctx := context.Background()
	fsn, err := e.client.ListOffers(ctx, e.call(""), api.OfferQuery{})
	if err != nil {
		t.Fatal(err)
	}
	nbg, err := e.client.ListOffers(ctx, e.call(""), api.OfferQuery{Region: "nbg1"})
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offerByID(fsn, "cx33"); ok {
		t.Errorf("cx33 is deprecated in fsn1 but offered there: %+v", o)
	}
	if o, ok := offerByID(nbg, "cx33"); !ok || !o.Available {
		t.Errorf("cx33 in nbg1 = %+v, %v; want offered and available", o, ok)
	}
	if o, ok := offerByID(fsn, "cpx22"); !ok || o.Available {
		t.Errorf("cpx22 in fsn1 = %+v, %v; want offered, not available", o, ok)
	}
	if o, ok := offerByID(nbg, "cpx22"); !ok || !o.Available || o.Region != "nbg1" {
		t.Errorf("cpx22 in nbg1 = %+v, %v; want offered and available in nbg1", o, ok)
	}
	if n := e.emu.Calls("GET /datacenters"); n != 0 {
		t.Errorf("%d calls of GET /datacenters, want none", n)
	}
}

func offerByID(offers []api.Offer, id string) (api.Offer, bool) {
	i := slices.IndexFunc(offers, func(o api.Offer) bool { return o.ID == id })
	if i < 0 {
		return api.Offer{}, false
	}
	return offers[i], true
}

// Field failure 6: list pages through managed servers only.
func TestListManagedOnly(t *testing.T) {
	e := newEnv(t)
	managed := e.emu.SeedServers(60, "managed", map[string]string{testPrefix + "/managed": "true"})
	e.emu.SeedServers(5, "other", map[string]string{"team": "ops"})
	e.emu.ResetCalls()
	items, _ := providertest.ListAll(t, e.client, e.call, 100, 6)
	var got []int64
	for _, m := range items {
		id, _ := strconv.ParseInt(m.ID, 10, 64)
		got = append(got, id)
	}
	if !slices.Equal(got, managed) {
		t.Fatalf("list yielded %d servers %v, want the 60 managed %v", len(got), got, managed)
	}
	if n := e.emu.Calls("GET /servers"); n != 2 {
		t.Fatalf("%d GET /servers, want 2 pages of 50", n)
	}
}

// Servers deleted between two list calls shift later servers onto pages
// already read: the cursor still yields every remaining server, once.
func TestListSurvivesDeletionsBetweenPages(t *testing.T) {
	e := newEnv(t)
	managed := e.emu.SeedServers(120, "managed", map[string]string{testPrefix + "/managed": "true"})
	ctx := context.Background()
	first, next, err := e.client.List(ctx, e.call(""), "", 50)
	if err != nil || len(first) != 50 || next == "" {
		t.Fatalf("first page: %d items, cursor %q, err %v", len(first), next, err)
	}
	for _, id := range managed[10:30] { // already returned: the rest shifts 20 places down
		e.emu.DeleteServerOutOfBand(id)
	}
	seen := map[string]int{}
	for _, m := range first {
		seen[m.ID]++
	}
	for cursor := next; cursor != ""; {
		var page []api.ExternalMachine
		page, cursor, err = e.client.List(ctx, e.call(""), cursor, 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page {
			seen[m.ID]++
		}
	}
	for _, id := range managed[50:] {
		if n := seen[strconv.FormatInt(id, 10)]; n != 1 {
			t.Fatalf("server %d listed %d times after deletions", id, n)
		}
	}
	if len(seen) != 120 {
		t.Fatalf("listed %d distinct servers, want all 120 (50 before the deletions, 70 after)", len(seen))
	}
}

func TestListCursorParsing(t *testing.T) {
	if c, err := parseListCursor("100:5000001:340"); err != nil || c != (listCursor{offset: 100, lastID: 5000001, total: 340}) {
		t.Fatalf("valid cursor: %+v, %v", c, err)
	}
	for _, bad := range []string{"50", "a:b:c", "-1:2:3", "1:2:3:4", "1:2:3x", " 1:2:3", "01:2:3"} {
		if _, err := parseListCursor(bad); api.AsComputeError(err).Path() != "cursor" {
			t.Errorf("cursor %q: %v, want INVALID_INPUT at cursor", bad, err)
		}
	}
}
