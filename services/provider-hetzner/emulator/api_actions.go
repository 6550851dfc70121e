package emulator

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// actionsReply renders a page of actions (filter: status), ordered by id.
//
// Guess: the sort parameter is ignored; ordering by id is what clients
// such as hcloud-go's WaitFor need.
func actionsReply(actions []*action, q url.Values, now time.Time) reply {
	statuses := q["status"]
	matched := make([]*action, 0, len(actions))
	for _, a := range actions {
		if len(statuses) == 0 || slices.Contains(statuses, a.status) {
			matched = append(matched, a)
		}
	}
	slices.SortFunc(matched, func(a, b *action) int { return cmp.Compare(a.id, b.id) })
	out, m := pageOf(matched, q, func(a *action) schema.Action { return a.toSchema(now) })
	return ok(struct {
		Actions []schema.Action `json:"actions"`
		Meta    meta            `json:"meta"`
	}{out, m})
}

// listActions serves GET /actions?id=…&id=…; unknown ids are left out.
//
// Guess: since 2025-01-30 the id filter is required; without one (or with
// a malformed one) the emulator answers 400 invalid_input.
func (e *Emulator) listActions(r *http.Request, _ string) reply {
	q := r.URL.Query()
	rawIDs := q["id"]
	if len(rawIDs) == 0 {
		return invalidInput(http.StatusBadRequest, []fieldError{field("id", "Missing data for required field.")})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	e.settleLocked(now)
	seen := make(map[int64]bool, len(rawIDs))
	actions := make([]*action, 0, len(rawIDs))
	for _, raw := range rawIDs {
		id, valid := parseID(raw)
		if !valid {
			return invalidInput(http.StatusBadRequest, []fieldError{field("id", "Not a valid integer.")})
		}
		if a := e.st.actions[id]; a != nil && !seen[id] {
			seen[id] = true
			actions = append(actions, a)
		}
	}
	return actionsReply(actions, q, now)
}

// getAction serves GET /actions/{id}.
func (e *Emulator) getAction(_ *http.Request, raw string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	e.settleLocked(now)
	if id, valid := parseID(raw); valid {
		if a := e.st.actions[id]; a != nil {
			return ok(schema.ActionGetResponse{Action: a.toSchema(now)})
		}
	}
	return notFound("action")
}
