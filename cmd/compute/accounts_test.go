package main

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// `accounts update --set` changes the fields it names and keeps the
// others, as `create --set` does; --version, when given, must be the
// version the change is made on.
func TestAccountsUpdateSetMerges(t *testing.T) {
	_, c := startTestCLI(t)
	sec, acct, _ := c.hetznerPool("prod")

	var updated api.Account
	c.must(&updated, "", "accounts", "update", acct.ID, "--version", "1", "--set", "location=nbg1")
	want := map[string]any{"token": sec.Ref, "location": "nbg1"}
	if updated.Version != 2 || !reflect.DeepEqual(updated.Config, want) {
		t.Fatalf("after update --set location=nbg1: version %d config %v, want version 2 config %v", updated.Version, updated.Config, want)
	}
	// Without --version: the version read.
	c.must(&updated, "", "accounts", "update", acct.ID, "--set", "location=fsn1", "--name", "production")
	want["location"] = "fsn1"
	if updated.Version != 3 || updated.Name != "production" || !reflect.DeepEqual(updated.Config, want) {
		t.Fatalf("after update --set location=fsn1: %+v, want version 3 config %v", updated, want)
	}
	// A stale --version changes nothing.
	_, err := c.run("", "accounts", "update", acct.ID, "--version", "1", "--set", "location=nbg1")
	if ce := api.AsComputeError(err); ce.Code != api.CodeConflict || ce.Path() != "version" {
		t.Fatalf("update at a stale version: %v, want CONFLICT naming version", err)
	}
	var now api.Account
	c.must(&now, "", "accounts", "get", acct.ID)
	if now.Version != 3 || !reflect.DeepEqual(now.Config, want) {
		t.Fatalf("after a refused update: %+v", now)
	}
}

// An update that meets another writer (CONFLICT) reads the account again
// and applies its --set to what it read then, with that version; with
// --version it stops at the first CONFLICT; it gives up after
// updateAttempts conflicts.
func TestAccountsUpdateRetriesAConflict(t *testing.T) {
	env := bustest.Start(t)
	var mu sync.Mutex
	var version int64 = 1 // another writer bumps it after every read
	var updates []api.AccountUpdateRequest
	conflicts := 0 // updates still to refuse
	id := api.NewID(api.PrefixAccount)
	_, err := bus.StartService(env.Connect(t), bus.ServiceConfig{Name: "accounts", Version: "1.0.0", Logger: zerolog.Nop(), Endpoints: []bus.Endpoint{
		{Name: "get", Subject: bus.Command("*", bus.ResourceAccounts, "get"), Handler: func(context.Context, *bus.Request) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			version++
			return api.Account{ID: id, Version: version, Config: map[string]any{"token": "secret://acme/sec_1", "seen": float64(version)}}, nil
		}},
		{Name: "update", Subject: bus.Command("*", bus.ResourceAccounts, "update"), Handler: func(_ context.Context, req *bus.Request) (any, error) {
			var in api.AccountUpdateRequest
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			mu.Lock()
			defer mu.Unlock()
			updates = append(updates, in)
			if conflicts > 0 {
				conflicts--
				return nil, api.Errorf(api.CodeConflict, "account %s is at version %d, not %d: read it again", id, in.Version+1, in.Version).WithPath("version")
			}
			return api.Account{ID: in.ID, Version: in.Version + 1, Config: in.Config}, nil
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := &cli{t: t, url: env.URL}
	cases := []struct {
		name      string
		conflicts int
		args      []string
		updates   int
		code      api.Code
	}{
		{"one conflict, then written", 1, nil, 2, ""},
		{"--version given: no second try", 1, []string{"--version", "7"}, 1, api.CodeConflict},
		{"conflicts every time", updateAttempts, nil, updateAttempts, api.CodeConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			conflicts, updates = tc.conflicts, nil
			mu.Unlock()
			_, err := c.run("", append([]string{"accounts", "update", id, "--set", "location=nbg1"}, tc.args...)...)
			mu.Lock()
			defer mu.Unlock()
			if ok := tc.code == "" && err == nil || tc.code != "" && api.IsCode(err, tc.code); !ok {
				t.Fatalf("update: %v, want %q", err, tc.code)
			}
			if len(updates) != tc.updates {
				t.Fatalf("%d update requests, want %d", len(updates), tc.updates)
			}
			last := updates[len(updates)-1]
			// Every update carries the version and config of the read just before it (or --version).
			want := map[string]any{"token": "secret://acme/sec_1", "seen": float64(version), "location": "nbg1"}
			wantVersion := version
			if tc.args != nil {
				wantVersion = 7
			}
			if last.Version != wantVersion || !reflect.DeepEqual(last.Config, want) {
				t.Fatalf("last update: version %d config %v, want version %d config %v", last.Version, last.Config, wantVersion, want)
			}
		})
	}
}
