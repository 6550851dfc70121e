package secrets

import (
	"context"
	"errors"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// RekeySubject is the internal subject of a rekey. deploy/nats.conf lets
// only the admin user publish it.
const RekeySubject = bus.InternalRoot + ".secrets.rekey"

// RekeyRequest asks for one batch of a rekey pass.
type RekeyRequest struct {
	// Cursor continues a pass after this record (the NextCursor of the
	// previous batch); empty starts a pass.
	Cursor string `json:"cursor,omitempty"`
	// Limit bounds the records visited by this batch; 0 visits as many as
	// two thirds of the caller's deadline allow (at least one).
	Limit int `json:"limit,omitempty"`
}

// RekeyReply reports one batch. A pass is done when NextCursor is empty;
// only the batch that ends it fills Remaining and Retired.
type RekeyReply struct {
	// KeyID is the current key: every value visited is now sealed with it.
	KeyID string `json:"keyId"`
	// Visited counts the records of this batch: Resealed + Current +
	// Vanished + len(Failed).
	Visited  int `json:"visited"`
	Resealed int `json:"resealed"`
	// Current counts values that were already sealed with KeyID.
	Current int `json:"current"`
	// Vanished counts values deleted while the batch ran.
	Vanished int `json:"vanished"`
	// Failed lists the references of values that do not open (corrupt or
	// tampered records; malformed record keys are listed as such); they keep
	// their key.
	Failed []string `json:"failed,omitempty"`
	// NextCursor continues the pass (empty: the pass is done).
	NextCursor string `json:"nextCursor,omitempty"`
	// Remaining counts stored values still sealed with another key once the
	// pass is done (a second read of every record). Zero retires the others.
	Remaining int `json:"remaining"`
	// Retired lists the key ids no value is sealed with any more: they may
	// be removed from the key file (the service then starts without them).
	Retired []string `json:"retired,omitempty"`
}

// Merge adds the counts and failures of batch, the next batch of the same
// pass, to r and takes its key id, cursor, remaining count and retired keys:
// r becomes the report of the pass so far.
func (r *RekeyReply) Merge(batch RekeyReply) {
	r.KeyID = batch.KeyID
	r.Visited += batch.Visited
	r.Resealed += batch.Resealed
	r.Current += batch.Current
	r.Vanished += batch.Vanished
	r.Failed = append(r.Failed, batch.Failed...)
	r.NextCursor, r.Remaining, r.Retired = batch.NextCursor, batch.Remaining, batch.Retired
}

// rekey re-seals stored values with the current key
// (compute.internal.secrets.rekey), one record at a time: read, open,
// seal, write back only if the record's revision is unchanged (else read
// again), so concurrent puts (new records, sealed with the current key) and
// deletes are never lost or undone. Requests keep being served throughout.
//
// Errors: INVALID_INPUT (cursor, limit), CONFLICT (a record kept changing;
// run again), UNAVAILABLE, INTERNAL (refusing to seal, see ensureKeyCheck).
func (s *service) rekey(ctx context.Context, req *bus.Request) (any, error) {
	var in RekeyRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if in.Limit < 0 {
		return nil, api.InvalidInput("limit", "limit must not be negative")
	}
	if _, _, ok := parseRecordKey(in.Cursor); in.Cursor != "" && !ok {
		return nil, api.InvalidInput("cursor", "cursor must be the nextCursor of a previous rekey reply")
	}
	if err := s.local.ensureKeyCheck(ctx); err != nil {
		return nil, err
	}
	stopAt := batchEnd(ctx)
	keys, err := s.local.secrets.Keys(ctx, "") // every tenant's, not the key checks
	if err != nil {
		return nil, err
	}
	out := RekeyReply{KeyID: s.local.keys.Current()}
	for _, k := range keys {
		if k <= in.Cursor {
			continue
		}
		if out.Visited > 0 && (out.Visited == in.Limit || time.Now().After(stopAt)) {
			out.NextCursor = in.Cursor
			break
		}
		if err := s.rekeyRecord(ctx, req, k, &out); err != nil {
			return nil, err
		}
		in.Cursor = k
	}
	if out.NextCursor == "" {
		if out.Remaining, err = s.local.countOtherKeys(ctx); err != nil {
			return nil, err
		}
		if out.Remaining == 0 {
			if out.Retired, err = s.local.retireKeys(ctx); err != nil {
				return nil, err
			}
		}
	}
	req.Log.Info().Str("key_id", out.KeyID).Int("visited", out.Visited).Int("resealed", out.Resealed).
		Int("vanished", out.Vanished).Int("failed", len(out.Failed)).Bool("pass_done", out.NextCursor == "").
		Int("remaining", out.Remaining).Strs("retired", out.Retired).Msg("rekey batch")
	return out, nil
}

// batchEnd is when a batch stops visiting records: two thirds into the time
// left before ctx's deadline, keeping the rest for the final count and the
// reply.
func batchEnd(ctx context.Context) time.Time {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(bus.DefaultTimeout)
	}
	return time.Now().Add(time.Until(deadline) * 2 / 3)
}

// rekeyRecord re-seals the record under key k with the current key and
// counts the outcome in out. Errors: CONFLICT, UNAVAILABLE, INTERNAL.
func (s *service) rekeyRecord(ctx context.Context, req *bus.Request, k string, out *RekeyReply) error {
	out.Visited++
	tenant, id, ok := parseRecordKey(k)
	if !ok {
		out.Failed = append(out.Failed, k)
		return nil
	}
	from := ""
	_, _, err := s.local.secrets.Mutate(ctx, tenant, id, func(rec *record) error {
		from = rec.KeyID
		if rec.KeyID == out.KeyID {
			return errSealedWithCurrent
		}
		plain, err := s.local.unseal(tenant, id, *rec)
		if err != nil {
			return errUnopened
		}
		s.local.sealInto(rec, tenant, id, plain)
		clear(plain)
		return nil
	})
	switch {
	case api.IsCode(err, api.CodeNotFound): // deleted meanwhile
		out.Vanished++
	case errors.Is(err, errSealedWithCurrent):
		out.Current++
	case errors.Is(err, errUnopened):
		req.Log.Warn().Str("for_tenant", tenant).Str("secret_id", id).Str("key_id", from).Msg("rekey: secret does not open; left as is")
		out.Failed = append(out.Failed, secretRef(tenant, id))
	case err != nil:
		return err
	default:
		req.Log.Debug().Str("for_tenant", tenant).Str("secret_id", id).Str("from_key_id", from).Str("key_id", out.KeyID).Msg("secret resealed")
		out.Resealed++
	}
	return nil
}

// Outcomes of a rekeyRecord change that leave the record as it is.
var (
	errSealedWithCurrent = errors.New("sealed with the current key")
	errUnopened          = errors.New("does not open")
)

// parseRecordKey splits a record key <tenant>.<secretId>.
func parseRecordKey(k string) (tenant, id string, ok bool) {
	tenant, id, ok = bus.SplitKey(k)
	return tenant, id, ok && api.ValidTenant(tenant) && api.ValidID(api.PrefixSecret, id)
}

// countOtherKeys counts the stored values sealed with a key other than the
// current one. Errors: UNAVAILABLE, INTERNAL.
func (s *localStore) countOtherKeys(ctx context.Context) (int, error) {
	n := 0
	err := s.secrets.Each(ctx, "", func(_, _ string, rec record, _ uint64) error {
		if rec.KeyID != s.keys.Current() {
			n++
		}
		return nil
	})
	return n, err
}
