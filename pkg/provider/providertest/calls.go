package providertest

import (
	"context"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// MustCreate creates spec with client under call's idempotency key and
// fails the test on error.
func MustCreate(t testing.TB, client provider.Client, call *provider.Call, spec api.MachineSpec) *api.ExternalMachine {
	t.Helper()
	m, err := client.Create(context.Background(), call, spec)
	if err != nil {
		t.Fatalf("create %s: %v", call.IdempotencyKey, err)
	}
	return m
}

// MustGet gets machine id with client and fails the test on error; nil
// when the machine is absent.
func MustGet(t testing.TB, client provider.Client, call *provider.Call, id string) *api.ExternalMachine {
	t.Helper()
	m, err := client.Get(context.Background(), call, id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return m
}

// ListAll pages through lister's machines, limit a page, from the first
// page to the last, each page with a call from call(""). It fails the test
// on an error, on a page of more than limit machines and when the list has
// not ended after maxPages pages. It returns the machines in order and the
// number of pages.
func ListAll(t testing.TB, lister provider.Lister, call func(key string) *provider.Call, limit, maxPages int) ([]api.ExternalMachine, int) {
	t.Helper()
	var all []api.ExternalMachine
	cursor := ""
	for pages := 1; pages <= maxPages; pages++ {
		items, next, err := lister.List(context.Background(), call(""), cursor, limit)
		if err != nil {
			t.Fatalf("list page %d: %v", pages, err)
		}
		if len(items) > limit {
			t.Fatalf("page of %d items, limit %d", len(items), limit)
		}
		all = append(all, items...)
		if next == "" {
			return all, pages
		}
		cursor = next
	}
	t.Fatalf("the list does not end after %d pages", maxPages)
	return nil, 0
}
