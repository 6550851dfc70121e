package client

import (
	"context"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// maxCandidates bounds the ids an ambiguity error lists.
const maxCandidates = 10

// resolve returns handle when it is an id with prefix, else the id of the
// one record of every (listed with all) whose name is handle. Errors:
// NOT_FOUND (details.id the handle), INVALID_INPUT (path name) listing up
// to maxCandidates ids in details.candidates when several have the name,
// and those of all.
func resolve[T any](ctx context.Context, prefix, kind, handle string,
	all func(context.Context) ([]T, error), idName func(*T) (id, name string)) (string, error) {
	if api.ValidID(prefix, handle) {
		return handle, nil
	}
	if handle == "" {
		return "", api.InvalidInput("id", "a %s id or name is required", kind)
	}
	items, err := all(ctx)
	if err != nil {
		return "", err
	}
	var ids []string
	for i := range items {
		if id, name := idName(&items[i]); name == handle {
			ids = append(ids, id)
		}
	}
	switch len(ids) {
	case 0:
		ce := api.Errorf(api.CodeNotFound, "no %s has the id or name %q", kind, handle)
		ce.Details.ID = handle
		return "", ce
	case 1:
		return ids[0], nil
	}
	shown := ids[:min(len(ids), maxCandidates)]
	ce := api.InvalidInput("name", "%d %ss are called %q: name one by id (%s)", len(ids), kind, handle, strings.Join(shown, ", "))
	ce.Details.Candidates = shown
	return "", ce
}
