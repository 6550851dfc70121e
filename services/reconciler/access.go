package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// This file holds what the configure and drain phases and the exec and
// logs endpoints share: reaching an instance's machine over SSH (see
// pkg/access and docs/architecture.md, "Machine access and host keys").

// accessTarget is how to reach machine m of inst with the pool's access
// a: the private key (privateKey), the SSH address (access.Address: a
// private address first when the instance's pool has a network) and the
// pinned host key (pinnedHostKey). Errors: the pool read's (NOT_FOUND,
// UNAVAILABLE), privateKey's, INVALID_STATE (the machine reports no
// address).
func (r *Reconciler) accessTarget(ctx context.Context, inst *api.Instance, a *api.PoolAccess,
	m *api.ExternalMachine) (access.Target, error) {
	pool, err := r.pool(ctx, inst.TenantID, inst.PoolID)
	if err != nil {
		return access.Target{}, err
	}
	addr := access.Address(m, a.Port, pool.Network != nil)
	if addr == "" {
		return access.Target{}, api.Errorf(api.CodeInvalidState, "machine %s reports no address to reach over SSH", m.ID)
	}
	key, err := r.privateKey(ctx, inst, a)
	if err != nil {
		return access.Target{}, err
	}
	return access.Target{Address: addr, User: a.User, Key: key, PinnedHostKey: pinnedHostKey(inst, m)}, nil
}

// privateKeyPath names the pool field of the private key's reference.
const privateKeyPath = "access.privateKey"

// privateKey is the private key of the pool's access a, resolved through
// the secrets service for this use only (compute.internal.secrets.resolve,
// for inst's tenant; never stored, logged or returned). Errors, each with
// details.path access.privateKey and a message naming the reference (never
// the value): the resolve's code (NOT_FOUND for a secret deleted,
// ACCESS_DENIED, UNSUPPORTED, UNAVAILABLE, …), INVALID_CONFIG (not a
// private key).
func (r *Reconciler) privateKey(ctx context.Context, inst *api.Instance, a *api.PoolAccess) (ssh.Signer, error) {
	var out api.SecretResolveReply
	if err := bus.Call(ctx, r.nc, bus.SecretsResolve, api.SecretResolveRequest{TenantID: inst.TenantID, Ref: a.PrivateKey}, &out); err != nil {
		return nil, keyError(a.PrivateKey, err)
	}
	key, err := access.ParseKey(out.Value, privateKeyPath)
	out.Value = ""
	if err != nil {
		return nil, keyError(a.PrivateKey, err)
	}
	return key, nil
}

// keyError is err, why the private key ref could not be had, with its code
// and details, details.path access.privateKey and a message naming the
// field and ref (a reference: no value).
func keyError(ref string, err error) *api.ComputeError {
	ce := api.AsComputeError(err)
	out := &api.ComputeError{Code: ce.Code, Message: privateKeyPath + " " + ref + ": " + ce.Message, Details: ce.Details}
	return out.WithPath(privateKeyPath)
}

// pinnedHostKey is the host key pinned for machine m ("" for a first
// contact): none when the pin is another machine's (the machine was
// re-made) or a reinstall of this one succeeded after it was pinned (a
// new disk has a new host key).
func pinnedHostKey(inst *api.Instance, m *api.ExternalMachine) string {
	st := inst.Status.Access
	if st == nil || st.HostKey == "" || st.HostKeyMachine != m.ID {
		return ""
	}
	op := inst.Status.LastOperation
	if op != nil && op.Action == api.ActionReinstall && op.State == api.OperationSucceeded && op.FinishedAt != nil &&
		st.HostKeyPinnedAt != nil && op.FinishedAt.After(*st.HostKeyPinnedAt) {
		return ""
	}
	return st.HostKey
}

// pin records the host key of a first contact with machine m (no change
// when it is the pinned one). Run it inside a status change.
func (r *Reconciler) pin(st *api.InstanceStatus, m *api.ExternalMachine, hostKey string) {
	st.Access = cloneAccess(st.Access)
	if st.Access.HostKey == hostKey && st.Access.HostKeyMachine == m.ID {
		return
	}
	now := r.now()
	st.Access.HostKey, st.Access.HostKeyMachine, st.Access.HostKeyPinnedAt = hostKey, m.ID, &now
}

// forgetAccess forgets, inside a status change, what access learnt of a
// machine deleted out of band: its pinned host key and the machine its
// configure outcome belongs to (so a re-made machine is pinned and
// configured anew even when the provider gives it the old id, as Proxmox
// may a VMID); a Configured condition says False MachineMissing (msg)
// until configure runs on the new machine.
func forgetAccess(st *api.InstanceStatus, msg string) {
	if st.Access == nil {
		return
	}
	st.Access = cloneAccess(st.Access)
	st.Access.HostKey, st.Access.HostKeyMachine, st.Access.HostKeyPinnedAt = "", "", nil
	if c := st.Access.Configure; c != nil {
		forgotten := *c
		forgotten.Machine = ""
		st.Access.Configure = &forgotten
	}
	if statusCondition(st, api.ConditionConfigured) != nil {
		setCondition(st, api.Condition{Type: api.ConditionConfigured, Status: api.ConditionFalse, Reason: api.ReasonMachineMissing, Message: msg})
	}
}

// accessMessage is the message of an access failure: the error's, which
// pkg/access and the secrets service keep free of key material.
func accessMessage(err error) string {
	var ce *api.ComputeError
	if errors.As(err, &ce) {
		return string(ce.Code) + ": " + ce.Message
	}
	return err.Error()
}

// stepOutcome is the status of a step that ran (res, err from
// access.Conn.Run): Succeeded on exit 0, TimedOut, or Failed (a non-zero
// exit or a dropped connection), with the exit code, a message and the
// output's tail.
func stepOutcome(res access.Result, err error) (api.StepState, *int, string, string) {
	tail := res.Stdout + res.Stderr
	if len(tail) > api.StepOutputTailBytes {
		tail = strings.ToValidUTF8(tail[len(tail)-api.StepOutputTailBytes:], "")
	}
	switch {
	case err != nil:
		return api.StepFailed, nil, accessMessage(err), tail
	case res.TimedOut:
		return api.StepTimedOut, nil, "timed out", tail
	case res.ExitCode != 0:
		code := res.ExitCode
		return api.StepFailed, &code, fmt.Sprintf("exited %d", code), tail
	}
	code := 0
	return api.StepSucceeded, &code, "exited 0", tail
}
