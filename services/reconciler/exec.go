package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// exec answers instances.exec: it runs the command on the instance's
// machine over SSH (the pool's user and key, the pinned host key) within
// timeoutMs (default 30 s, at most 5 min; the request's deadline bounds
// it too), and answers the exit code, the last 64 KiB of stdout and of
// stderr, and the truncated and timedOut flags. Each exec is audited as
// an exec event naming the command's first 200 bytes and the exit code.
// Errors: INVALID_INPUT (id, command, timeoutMs), NOT_FOUND, INVALID_STATE
// (the machine is not running, the pool has no access, no host key is
// pinned yet, or the machine presented another one), UNAVAILABLE (SSH
// does not answer; the key could not be resolved), ACCESS_DENIED (the
// machine refused the key).
func (r *Reconciler) exec(ctx context.Context, req *bus.Request) (any, error) {
	var in api.InstanceExecRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := in.Check(); err != nil {
		return nil, err
	}
	timeout := api.DefaultExecTimeout
	if in.TimeoutMs > 0 {
		timeout = time.Duration(in.TimeoutMs) * time.Millisecond
	}
	inst, res, err := r.runOnMachine(ctx, req.Tenant, in.ID, timeout, access.Command{Line: in.Command, Limit: api.ExecOutputBytes})
	if err != nil {
		return nil, err
	}
	cmd := in.Command
	if len(cmd) > 200 {
		cmd = strings.ToValidUTF8(cmd[:200], "") + "…"
	}
	r.publishEvent(inst, api.EventExec, fmt.Sprintf("exec exited %d: %s", res.ExitCode, cmd))
	req.Log.Info().Str("instance", in.ID).Int("exit", res.ExitCode).Bool("timed_out", res.TimedOut).Msg("exec ran")
	return &api.InstanceExecReply{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr,
		Truncated: res.Truncated, TimedOut: res.TimedOut}, nil
}

// logs answers instances.logs: the last lines (default 100, at most 5000)
// of the machine's cloud-init output, journal or console (the kernel's
// messages), read over SSH as exec does (api.LogCommand), bounded at
// 64 KiB; audited as a logs event. Errors: those of exec, INVALID_INPUT
// naming source or lines.
func (r *Reconciler) logs(ctx context.Context, req *bus.Request) (any, error) {
	var in api.InstanceLogsRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := in.Check(); err != nil {
		return nil, err
	}
	lines := in.Lines
	if lines == 0 {
		lines = api.DefaultLogLines
	}
	inst, res, err := r.runOnMachine(ctx, req.Tenant, in.ID, api.DefaultExecTimeout,
		access.Command{Line: api.LogCommand(in.Source, lines), Limit: api.ExecOutputBytes})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, api.Errorf(api.CodeUnavailable, "reading the %s log exited %d: %s", in.Source, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	r.publishEvent(inst, api.EventLogs, fmt.Sprintf("logs %s, %d lines", in.Source, lines))
	out := &api.InstanceLogsReply{Source: in.Source, Lines: []string{}, Truncated: res.Truncated}
	if text := strings.TrimSuffix(res.Stdout, "\n"); text != "" {
		out.Lines = strings.Split(text, "\n")
	}
	return out, nil
}

// runOnMachine runs cmd on instance id's machine within timeout. Errors:
// see exec.
func (r *Reconciler) runOnMachine(ctx context.Context, tenant, id string, timeout time.Duration,
	cmd access.Command) (*api.Instance, access.Result, error) {
	inst, err := r.load(ctx, tenant, id)
	if err != nil {
		return nil, access.Result{}, err
	}
	m := inst.Status.Machine
	if inst.DeletionRequestedAt != nil || m == nil || m.State != api.StateRunning {
		return nil, access.Result{}, api.Errorf(api.CodeInvalidState, "instance %s is %s: its machine is not running", id, inst.Status.Phase)
	}
	pool, _, err := r.pools.Get(ctx, tenant, inst.PoolID)
	if err != nil {
		return nil, access.Result{}, err
	}
	if pool.Access == nil {
		return nil, access.Result{}, api.Errorf(api.CodeInvalidState, "pool %s has no access: the platform does not reach its machines", pool.ID)
	}
	if c := condition(inst, api.ConditionHostKeyChanged); c != nil && c.Status == api.ConditionTrue {
		return nil, access.Result{}, api.Errorf(api.CodeInvalidState, "instance %s: %s", id, c.Message)
	}
	target, err := r.accessTarget(ctx, inst, pool.Access, m)
	if err != nil {
		return nil, access.Result{}, err
	}
	if target.PinnedHostKey == "" {
		return nil, access.Result{}, api.Errorf(api.CodeInvalidState, "instance %s: no host key is pinned for machine %s yet", id, m.ID)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := access.Connect(tctx, target)
	if err != nil {
		return nil, access.Result{}, accessError(err)
	}
	defer conn.Close()
	res, err := conn.Run(tctx, cmd)
	if err != nil {
		return nil, access.Result{}, accessError(err)
	}
	return inst, res, nil
}

// accessError is the ComputeError of a failed connection or session.
func accessError(err error) error {
	switch {
	case errors.Is(err, access.ErrHostKeyChanged):
		return api.Errorf(api.CodeInvalidState, "%s", err.Error())
	case errors.Is(err, access.ErrDenied):
		return api.Errorf(api.CodeAccessDenied, "%s", err.Error())
	}
	return api.Errorf(api.CodeUnavailable, "%s", err.Error())
}
