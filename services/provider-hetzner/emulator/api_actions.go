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
	out, m := pageOf(selectActions(actions, q), q, func(a *action) schema.Action { return a.toSchema(now) })
	return ok(struct {
		Actions []schema.Action `json:"actions"`
		Meta    meta            `json:"meta"`
	}{out, m})
}

// selectActions are the actions with a status q asks for (all without a
// status filter), ordered by id.
func selectActions(actions []*action, q url.Values) []*action {
	statuses := q["status"]
	matched := make([]*action, 0, len(actions))
	for _, a := range actions {
		if len(statuses) == 0 || slices.Contains(statuses, a.status) {
			matched = append(matched, a)
		}
	}
	slices.SortFunc(matched, func(a, b *action) int { return cmp.Compare(a.id, b.id) })
	return matched
}

// listActions serves GET /actions?id=…&id=… (filter: status): every
// listed action of the ids, by id, in one reply {actions} without meta, as
// the real API answers it (clients such as hcloud-go stop after it);
// unknown ids are left out.
//
// Guess: since 2025-01-30 the id filter is required; without one (or with
// a malformed one) the emulator answers 400 invalid_input. The API
// documents no maximum number of ids; the emulator answers them all.
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
	matched := selectActions(actions, q)
	out := make([]schema.Action, 0, len(matched))
	for _, a := range matched {
		out = append(out, a.toSchema(now))
	}
	return ok(struct {
		Actions []schema.Action `json:"actions"`
	}{out})
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
