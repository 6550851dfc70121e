package emulator

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// getTaskStatus serves GET /nodes/{node}/tasks/{upid}/status. Due tasks
// were completed before the handler ran, so the reply is current.
func (e *Emulator) getTaskStatus(c *call) (any, *apiError) {
	s := c.r.PathValue("upid")
	if _, err := parseUPID(s); err != nil {
		return nil, errParam("upid", err.Error())
	}
	t, ok := e.tasks[s]
	if !ok || t.id.node != c.node.Name {
		// Guess: the wording for a well-formed UPID that is not known.
		return nil, errInternal("no such task '%s'", s)
	}
	return t.statusView(), nil
}

// defaultTaskListLimit is limit of GET /nodes/{node}/tasks when absent.
const defaultTaskListLimit = 50

// getNodeTasks serves GET /nodes/{node}/tasks: the node's tasks, newest
// first, {"data": [...], "total": N}. Parameters: source (archive, the
// default: finished tasks only; active: running only; all), vmid, typefilter,
// since and until (Unix seconds, on the start time), start (offset) and
// limit (default 50). A finished task's entry has endtime and status (its
// exit status); a running one has status "RUNNING" and no endtime.
//
// Guess: entries are ordered by start time, newest first (the archive is
// read from its end); the emulator knows no maximum limit; due tasks were
// completed before the handler ran, so the list is current (PVE's active
// list is too: it is read from the running workers).
func (e *Emulator) getNodeTasks(c *call) (any, *apiError) {
	source := c.p["source"]
	switch source {
	case "":
		source = "archive"
	case "archive", "active", "all":
	default:
		return nil, errParam("source", fmt.Sprintf("value '%s' does not have a value in the enumeration 'archive, active, all'", source))
	}
	vmid, byVMID, aerr := c.p.intParam("vmid", 100, 999_999_999)
	if aerr != nil {
		return nil, aerr
	}
	since, _, aerr := c.p.intParam("since", 0, math.MaxInt)
	if aerr != nil {
		return nil, aerr
	}
	until, byUntil, aerr := c.p.intParam("until", 0, math.MaxInt)
	if aerr != nil {
		return nil, aerr
	}
	start, _, aerr := c.p.intParam("start", 0, math.MaxInt)
	if aerr != nil {
		return nil, aerr
	}
	limit, byLimit, aerr := c.p.intParam("limit", 0, math.MaxInt)
	if aerr != nil {
		return nil, aerr
	}
	if !byLimit {
		limit = defaultTaskListLimit
	}
	typ := c.p["typefilter"]
	var matched []*task
	for _, t := range e.tasks {
		switch {
		case t.id.node != c.node.Name,
			source == "archive" && !t.done, source == "active" && t.done,
			byVMID && t.id.id != strconv.Itoa(vmid),
			typ != "" && t.id.typ != typ,
			t.id.startTime < int64(since), byUntil && t.id.startTime > int64(until):
			continue
		}
		matched = append(matched, t)
	}
	slices.SortFunc(matched, func(a, b *task) int {
		return cmp.Or(cmp.Compare(b.id.startTime, a.id.startTime), cmp.Compare(b.id.pid, a.id.pid))
	})
	total := len(matched)
	matched = matched[min(start, total):min(start+limit, total)]
	out := make([]map[string]any, 0, len(matched))
	for _, t := range matched {
		out = append(out, t.listView())
	}
	return counted{items: out, total: total}, nil
}
