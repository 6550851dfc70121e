package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Task statuses of GET /nodes/{node}/tasks/{upid}/status.
const (
	taskRunning = "running"
	taskStopped = "stopped"
)

// taskStatus is the reply of GET /nodes/{node}/tasks/{upid}/status.
type taskStatus struct {
	Status     string `json:"status"`
	ExitStatus string `json:"exitstatus"`
}

// startTask sends a call answering a UPID (POST or PUT params to path) and
// waits for the task. A reply of null (PVE before 8 answers resize so) is
// a change made at once.
func (s *session) startTask(ctx context.Context, method, path string, params map[string]any) error {
	send := s.post
	if method == http.MethodPut {
		send = s.put
	}
	data, err := send(ctx, path, params)
	if err != nil || isNull(data) {
		return err
	}
	return s.waitReply(ctx, method+" "+path, data)
}

// waitReply waits for the task whose UPID is the reply data of what.
func (s *session) waitReply(ctx context.Context, what string, data json.RawMessage) error {
	upid, node, err := upidOf(what, data)
	if err != nil {
		return err
	}
	return s.wait(ctx, upid, node)
}

// wait polls the task on the call's clock (its GET
// /nodes/{node}/tasks/{upid}/status, or a share of the account's node task
// list, see pollTask) until it stops, and returns its outcome: nil for exit status OK
// or "WARNINGS: N" (a success), a task *pveError otherwise. Polls come
// every poll interval (the first after one interval) when the account or
// the options set one, else as the client's taskPacer says. Errors:
// PROVIDER_ERROR code task_timeout when the task still runs after the
// task timeout (it is left running); UNAVAILABLE when ctx ends first;
// those of the status request.
func (s *session) wait(ctx context.Context, upid, node string) error {
	timing := s.c.timing
	start := s.call.Clock.Now()
	deadline := start.Add(timing.timeout)
	path := "/nodes/" + url.PathEscape(node) + "/tasks/" + url.PathEscape(upid) + "/status"
	typ := node + "/" + upidType(upid) // durations are learned per node and task type
	delay, running := timing.poll, time.Duration(0)
	if timing.adaptive {
		delay = s.c.pacer.first(typ)
	}
	for range timing.maxPolls() {
		if err := provider.Sleep(ctx, s.call.Clock, delay); err != nil {
			return err
		}
		st, err := s.pollTask(ctx, upid, node, path)
		if err != nil {
			return err
		}
		elapsed := s.call.Clock.Now().Sub(start)
		switch st.Status {
		case taskStopped:
			if timing.adaptive {
				s.c.pacer.learn(typ, running, elapsed)
			}
			err := taskOutcome(upid, st.ExitStatus)
			var pe *pveError
			if errors.As(err, &pe) && pe.refused() {
				s.rec.taskRefused()
			}
			return err
		case taskRunning:
		default:
			return unexpectedReply("GET "+path, fmt.Errorf("task status %q", st.Status))
		}
		if !s.call.Clock.Now().Before(deadline) {
			break
		}
		if running = elapsed; timing.adaptive {
			delay = s.c.pacer.next(typ, elapsed)
		}
	}
	return api.ProviderError(http.StatusOK, codeTaskTimeout, "proxmox: task %s still running after %s", upid, timing.timeout)
}

// taskOutcome is nil for a successful exit status (OK, or WARNINGS: N),
// else the task's failure.
func taskOutcome(upid, exit string) error {
	if exit == "OK" || strings.HasPrefix(exit, "WARNINGS") {
		return nil
	}
	if exit == "" {
		exit = "task stopped without an exit status"
	}
	return taskFailure(upid, exit)
}
