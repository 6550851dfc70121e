package hetzner

import (
	"context"
	"fmt"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// listPageSize is per_page of GET /servers (the API's maximum).
const listPageSize = 50

// List returns up to limit managed servers (label <prefix>/managed=true)
// after cursor, in id order, from GET /servers (per_page 50): one request
// per call. The API pages by position, so deleting a server between two
// calls shifts later ones onto a page already read. The cursor is
// "<position>:<last id returned>:<total seen>", and a call detects a shift
// (the server before position is no longer the last one returned, or, at a
// page boundary, the total went down), then steps back a page (another
// request) while the page starts above the last id. Only ids above it are
// returned: nothing is repeated, and nothing is skipped unless deletions
// and as many creations both land between two calls at a page boundary.
// Servers created meanwhile have higher ids and come last. The next cursor
// is "" after the last server.
//
// Errors: INVALID_INPUT (cursor), RATE_LIMITED, PROVIDER_ERROR, UNAVAILABLE.
func (c *client) List(ctx context.Context, call *provider.Call,
	cursor string, limit int) (items []api.ExternalMachine, next string, err error) {
	cur, err := parseListCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	limit = max(limit, 1)
	s, err := c.open(ctx, call, provider.VerbList)
	if err != nil {
		return nil, "", err
	}
	defer func() { err = s.done(ctx, err) }()
	page := cur.offset/listPageSize + 1
	servers, meta, err := c.listPage(ctx, s, page)
	if err != nil {
		return nil, "", err
	}
	if cur.shifted(servers, meta.TotalEntries) {
		for page > 1 && (len(servers) == 0 || servers[0].ID > cur.lastID) {
			page--
			if servers, meta, err = c.listPage(ctx, s, page); err != nil {
				return nil, "", err
			}
		}
	}
	more := meta.NextPage != 0
	pos := (page - 1) * listPageSize
	items = make([]api.ExternalMachine, 0, min(limit, len(servers)))
	for i, srv := range servers {
		if srv.ID <= cur.lastID {
			continue
		}
		if len(items) == limit {
			more = true
			break
		}
		items = append(items, *c.toMachine(srv, ""))
		cur.lastID, cur.offset = srv.ID, pos+i+1
	}
	if more {
		next = fmt.Sprintf("%d:%d:%d", cur.offset, cur.lastID, meta.TotalEntries)
	}
	return items, next, nil
}

// listPage reads one page of managed servers in id order.
func (c *client) listPage(ctx context.Context, s *session, page int) ([]*hcloud.Server, hcloud.Pagination, error) {
	servers, resp, err := s.api.Server.List(ctx, hcloud.ServerListOpts{
		ListOpts: hcloud.ListOpts{LabelSelector: c.labels.managedSelector(), Page: page, PerPage: listPageSize},
		Sort:     []string{"id:asc"},
	})
	if err != nil || resp.Meta.Pagination == nil {
		return servers, hcloud.Pagination{}, err
	}
	return servers, *resp.Meta.Pagination, nil
}

// listCursor is where a list call continues.
type listCursor struct {
	offset int
	lastID int64
	total  int
}

// parseListCursor reads "<position>:<last id>:<total>" ("" is the start).
func parseListCursor(cursor string) (listCursor, error) {
	if cursor == "" {
		return listCursor{}, nil
	}
	var c listCursor
	if n, err := fmt.Sscanf(cursor, "%d:%d:%d", &c.offset, &c.lastID, &c.total); err != nil || n != 3 ||
		c.offset < 0 || c.lastID < 0 || c.total < 0 || fmt.Sprintf("%d:%d:%d", c.offset, c.lastID, c.total) != cursor {
		return listCursor{}, api.InvalidInput("cursor", "cursor must be the nextCursor of a previous page")
	}
	return c, nil
}

// shifted reports whether servers were deleted before the cursor's position
// since it was made: the server just before the position (on this page) is
// no longer the last one returned, or, at a page boundary, fewer servers
// exist than then.
func (c listCursor) shifted(page []*hcloud.Server, total int) bool {
	if c.lastID == 0 {
		return false
	}
	if i := c.offset % listPageSize; i > 0 {
		return i > len(page) || page[i-1].ID != c.lastID
	}
	return total < c.total
}
