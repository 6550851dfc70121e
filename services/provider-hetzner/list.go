package hetzner

import (
	"context"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// listPageSize is per_page of GET /servers (the API's maximum).
const listPageSize = 50

// List returns up to limit managed servers (label <prefix>/managed=true)
// after cursor, with one GET /servers per call (per_page 50). The cursor is
// the number of managed servers already returned ("" = 0), so it stays
// valid whatever limit the next call asks for; a page holds at most 50
// machines. The next cursor is "" after the last server.
//
// Errors: INVALID_INPUT (cursor), RATE_LIMITED, PROVIDER_ERROR, UNAVAILABLE.
func (c *client) List(ctx context.Context, call *provider.Call, cursor string, limit int) (items []api.ExternalMachine, next string, err error) {
	offset := 0
	if cursor != "" {
		offset, err = strconv.Atoi(cursor)
		if err != nil || offset < 0 {
			return nil, "", api.InvalidInput("cursor", "cursor must be the nextCursor of a previous page")
		}
	}
	limit = max(limit, 1)
	s, err := c.open(ctx, call, provider.VerbList)
	if err != nil {
		return nil, "", err
	}
	defer func() { err = s.done(ctx, err) }()
	servers, resp, err := s.api.Server.List(ctx, hcloud.ServerListOpts{
		ListOpts: hcloud.ListOpts{LabelSelector: c.labels.managedSelector(), Page: offset/listPageSize + 1, PerPage: listPageSize},
		Sort:     []string{"id:asc"},
	})
	if err != nil {
		return nil, "", err
	}
	servers = servers[min(offset%listPageSize, len(servers)):]
	more := resp.Meta.Pagination != nil && resp.Meta.Pagination.NextPage != 0
	if len(servers) > limit {
		servers, more = servers[:limit], true
	}
	items = make([]api.ExternalMachine, 0, len(servers))
	for _, srv := range servers {
		items = append(items, *toMachine(srv))
	}
	if more {
		next = strconv.Itoa(offset + len(items))
	}
	return items, next, nil
}
