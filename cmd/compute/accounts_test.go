package main

import (
	"reflect"
	"testing"

	"better-compute.io/compute/pkg/api"
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
