package secrets

import (
	"context"
	"errors"
	"strings"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// delete removes a secret (secrets.delete). Errors: INVALID_INPUT (id),
// NOT_FOUND, INVALID_STATE while records hold it, with details.accounts
// (ids of the tenant's accounts whose config references the secret) and
// details.pools (ids of its pools whose access.privateKey names it),
// CONFLICT (the record kept changing), UNAVAILABLE (also when the delete
// took longer than deleteLease), INTERNAL.
//
// A delete and an account or pool write naming the secret never both
// succeed: each writes first and then reads what the other writes. The
// delete marks the record (record.DeletingAt, a revision CAS), then scans
// the holders, and then either takes the mark back and refuses, or removes
// the record at the revision it marked. accounts.create and update and
// pools.create write their record, then check each reference again
// (check refuses a marked secret) and remove their record if one fails. So
// a record written before the scan is seen by it, and one written after
// the mark sees the mark. (If accounts crashes between writing its record
// and taking it back, that unacknowledged record names the removed secret:
// its uses then fail with NOT_FOUND.) A marked secret still resolves for its holders
// until it is removed; a mark left by a crashed delete stops counting after
// deleteLease, and the next delete replaces it. The only other writer of a
// stored secret is a rekey re-sealing it (the mark stays), so on a
// conflict the delete reads the new revision and removes it while it
// still carries its own mark.
func (s *service) delete(ctx context.Context, req *bus.Request) (any, error) {
	var in api.IDRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	switch {
	case in.ID == "":
		return nil, api.InvalidInput("id", "id is required")
	case !api.ValidID(api.PrefixSecret, in.ID):
		return nil, api.InvalidInput("id", "id must be a secret id (sec_<ulid>)")
	}
	started := time.Now()
	mark := started.UTC()
	_, rev, err := s.local.secrets.Mutate(ctx, req.Tenant, in.ID, func(rec *record) error {
		rec.DeletingAt = &mark
		return nil
	})
	if err != nil {
		return nil, err
	}
	accounts, pools, err := s.holders.of(ctx, req.Tenant, secretRef(req.Tenant, in.ID))
	if err == nil && len(accounts)+len(pools) > 0 {
		var by []string
		if len(accounts) > 0 {
			by = append(by, "provider account(s) "+strings.Join(accounts, ", "))
		}
		if len(pools) > 0 {
			// a pool's access does not change: the pool goes first
			by = append(by, "pool(s) "+strings.Join(pools, ", ")+" as access.privateKey (delete the pools)")
		}
		ce := api.Errorf(api.CodeInvalidState, "secret %s is referenced by %s; remove the references first",
			in.ID, strings.Join(by, " and "))
		ce.Details.Accounts, ce.Details.Pools = accounts, pools
		err = ce
	}
	if err == nil && time.Since(started) >= deleteLease {
		err = api.Errorf(api.CodeUnavailable, "deleting secret %s took longer than %s; retry", in.ID, deleteLease)
	}
	if err != nil {
		s.unmark(ctx, req, in.ID, mark)
		return nil, err
	}
	if err := s.removeMarked(ctx, req.Tenant, in.ID, rev, mark); err != nil {
		return nil, err
	}
	req.Log.Info().Str("secret_id", in.ID).Msg("secret deleted")
	return api.Deleted{ID: in.ID, Deleted: true}, nil
}

// ownMark is true when rec carries the mark a delete wrote at mark.
func ownMark(rec *record, mark time.Time) bool {
	return rec.DeletingAt != nil && rec.DeletingAt.Equal(mark)
}

// removeMarked deletes the secret id of tenant at rev, or, when a rekey
// re-sealed it since, at its new revision as long as it still carries the
// mark written at mark (bus.CASAttempts tries in all). Errors: NOT_FOUND,
// CONFLICT (another delete replaced the mark, or the record kept
// changing), UNAVAILABLE, INTERNAL.
func (s *service) removeMarked(ctx context.Context, tenant, id string, rev uint64, mark time.Time) error {
	for range bus.CASAttempts {
		err := s.local.secrets.Delete(ctx, tenant, id, rev)
		if !api.IsCode(err, api.CodeConflict) {
			return err
		}
		var rec record
		if rec, rev, err = s.local.read(ctx, tenant, id); err != nil {
			return err
		}
		if !ownMark(&rec, mark) {
			return api.Errorf(api.CodeConflict, "secret %s was changed by another delete; retry", id)
		}
	}
	return api.Errorf(api.CodeConflict, "secret %s kept changing (%d attempts); retry", id, bus.CASAttempts)
}

// unmark takes back the mark a refused delete wrote at mark, leaving a
// record marked since by another delete as it is. A failure is logged: the
// mark then lapses after deleteLease.
func (s *service) unmark(ctx context.Context, req *bus.Request, id string, mark time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unmarkTimeout)
	defer cancel()
	_, _, err := s.local.secrets.Mutate(ctx, req.Tenant, id, func(rec *record) error {
		if !ownMark(rec, mark) {
			return errNotOwnMark
		}
		rec.DeletingAt = nil
		return nil
	})
	if err != nil && !errors.Is(err, errNotOwnMark) && !api.IsCode(err, api.CodeNotFound) {
		req.Log.Warn().Str("secret_id", id).Str("error", err.Error()).Msg("refused delete could not take back its mark")
	}
}

// unmarkTimeout bounds unmark, also when the request's deadline has passed.
const unmarkTimeout = 5 * time.Second

// errNotOwnMark ends an unmark that finds another delete's mark.
var errNotOwnMark = errors.New("marked by another delete")
