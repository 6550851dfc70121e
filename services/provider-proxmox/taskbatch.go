package proxmox

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// taskListLimit is limit of the shared GET /nodes/{node}/tasks.
//
// Guess: PVE documents no maximum; a task the list leaves out is polled
// alone, so a smaller real maximum costs requests, not correctness.
const taskListLimit = 500

// taskBatchSize is the most task polls one shared request answers.
const taskBatchSize = 100

// opTasks is the operation a shared task poll reports (CallCounter, log
// lines): it serves the task waits of every call of the account.
const opTasks = "tasks"

// taskRef is a task a wait polls: its node and UPID.
type taskRef struct {
	node, upid string
}

// taskEntry is an entry of GET /nodes/{node}/tasks: status is the exit
// status once the task ended, "RUNNING" while it runs.
type taskEntry struct {
	UPID   string `json:"upid"`
	Status string `json:"status"`
}

// taskListRunning is status of a running task in the node's task list.
const taskListRunning = "RUNNING"

// fetchTasks answers a batch of task polls with one request per node of
// the batch: GET /nodes/{node}/tasks?source=all&since=<the oldest polled
// task's start>&limit=taskListLimit, running and finished tasks alike. A
// task the list leaves out, or lists without a status, is not answered:
// its wait polls its own status.
func (c *client) fetchTasks(ctx context.Context, call *provider.Call, refs []taskRef) (out map[taskRef]taskStatus, err error) {
	s, err := c.open(ctx, call, opTasks)
	if err != nil {
		return nil, err
	}
	defer s.end(ctx, &err)
	since := map[string]int64{}
	for _, r := range refs {
		start := upidStart(r.upid)
		if cur, ok := since[r.node]; !ok || start < cur {
			since[r.node] = start
		}
	}
	nodes := make([]string, 0, len(since))
	for n := range since {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	listed := map[string]taskEntry{}
	for _, node := range nodes {
		var entries []taskEntry
		q := url.Values{"source": {"all"}, "since": {strconv.FormatInt(since[node], 10)}, "limit": {strconv.Itoa(taskListLimit)}}
		if err := s.get(ctx, "/nodes/"+url.PathEscape(node)+"/tasks", q, &entries); err != nil {
			return nil, err
		}
		for _, e := range entries {
			listed[e.UPID] = e
		}
	}
	out = make(map[taskRef]taskStatus, len(refs))
	for _, r := range refs {
		switch e, ok := listed[r.upid]; {
		case !ok || e.Status == "":
		case e.Status == taskListRunning:
			out[r] = taskStatus{Status: taskRunning}
		default:
			out[r] = taskStatus{Status: taskStopped, ExitStatus: e.Status}
		}
	}
	return out, nil
}

// pollTask reads the status of task upid on node once: through the
// account's shared task poll (see fetchTasks) when it is on, and alone
// (GET path, the task's status) when it is off or the list left the task
// out.
func (s *session) pollTask(ctx context.Context, upid, node, path string) (taskStatus, error) {
	if s.c.tasks != nil {
		st, found, err := s.c.tasks.Lookup(ctx, s.call, taskRef{node: node, upid: upid})
		if ce := (*api.ComputeError)(nil); errors.As(err, &ce) {
			// The shared poll changed nothing, but this call may have: its
			// own requests decide details.notExecuted (see markNotExecuted).
			ce.Details.NotExecuted = false
		}
		if err != nil || found {
			return st, err
		}
	}
	var st taskStatus
	err := s.get(ctx, path, nil, &st)
	return st, err
}

// upidStart is the start time (Unix seconds) a UPID records
// (UPID:{node}:{pid}:{pstart}:{starttime}:{type}:{id}:{user}:, starttime
// in hex), 0 when it has none.
func upidStart(upid string) int64 {
	if parts := strings.Split(upid, ":"); len(parts) >= 9 {
		if t, err := strconv.ParseInt(parts[4], 16, 64); err == nil {
			return t
		}
	}
	return 0
}
