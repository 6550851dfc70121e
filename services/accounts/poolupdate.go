package accounts

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// updatePool answers pools.update {id, version?, sizes?, template?,
// rollout?} (api.PoolUpdateRequest) with the pool as written (version + 1).
// Sizes are merged into the pool's; a template other than the current one
// appends a revision (the previous revision + 1; the PoolRevisionsKept
// newest are kept): the pool controller rolls it out. A pool sized or
// templated for the first time gets revision 1.
//
// Errors: INVALID_INPUT (path id; sizes.<flavor> for an unknown flavor or a
// size outside 0..MaxPoolSize; template.image, template.labels.<key>;
// rollout.maxSurge, rollout.maxUnavailable for a negative bound or both 0),
// NOT_FOUND, CONFLICT (path version) when version is not the pool's,
// INVALID_STATE while the pool is being deleted, UNAVAILABLE.
func (s *service) updatePool(ctx context.Context, req *bus.Request) (any, error) {
	var in api.PoolUpdateRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := checkPoolUpdate(&in); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	p, err := s.changePool(ctx, req.Tenant, in.ID, in.Version, func(p *api.Pool) error {
		for name, n := range in.Sizes {
			if _, ok := p.Flavor(name); !ok {
				return api.InvalidInput("sizes."+name, "pool %s has no flavor %q", p.ID, name)
			}
			if p.Sizes == nil || n != p.Sizes[name] {
				p.Sizes = maps.Clone(p.Sizes)
				if p.Sizes == nil {
					p.Sizes = map[string]int{}
				}
				p.Sizes[name] = n
			}
		}
		if in.Rollout != nil {
			r := *in.Rollout
			p.Rollout = &r
		}
		tmpl := p.Template
		if in.Template != nil {
			tmpl = in.Template
		}
		if tmpl == nil || tmpl.Image == "" {
			if err := checkFlavorImages(p); err != nil {
				return err
			}
		}
		if p.Revision == 0 || (in.Template != nil && !sameTemplate(p.Template, in.Template)) {
			addRevision(p, tmpl, 0, now)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	req.Log.Info().Str("pool", p.ID).Int64("revision", p.Revision).Int64("version", p.Version).Msg("pool updated")
	return p, nil
}

// rollbackPool answers pools.rollback {id, version?, revision?}
// (api.PoolRollbackRequest) with the pool as written: a new revision whose
// template is revision's (default: the kept revision before the current
// one), rolled out by the pool controller like a deploy.
//
// Errors: INVALID_INPUT (path id; revision when the pool does not keep
// that revision, or it is the current one), INVALID_STATE when the pool
// has no earlier revision or is being deleted, NOT_FOUND, CONFLICT (path
// version), UNAVAILABLE.
func (s *service) rollbackPool(ctx context.Context, req *bus.Request) (any, error) {
	var in api.PoolRollbackRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := checkID(api.PrefixPool, "id", in.ID); err != nil {
		return nil, err
	}
	if in.Revision < 0 {
		return nil, api.InvalidInput("revision", "revision must be a revision number (1, 2, …)")
	}
	now := time.Now().UTC()
	p, err := s.changePool(ctx, req.Tenant, in.ID, in.Version, func(p *api.Pool) error {
		target := in.Revision
		if target == 0 {
			if len(p.Revisions) < 2 {
				return api.Errorf(api.CodeInvalidState, "pool %s has no earlier revision to roll back to", p.ID)
			}
			target = p.Revisions[len(p.Revisions)-2].Revision
		}
		if target == p.Revision {
			return api.InvalidInput("revision", "revision %d is the current revision of pool %s", target, p.ID)
		}
		tmpl, ok := p.RevisionTemplate(target)
		if !ok {
			return api.InvalidInput("revision", "pool %s keeps revisions %s only", p.ID, revisionList(p))
		}
		addRevision(p, &tmpl, target, now)
		return nil
	})
	if err != nil {
		return nil, err
	}
	req.Log.Info().Str("pool", p.ID).Int64("revision", p.Revision).Msg("pool rolled back")
	return p, nil
}

// getPool answers pools.get {id}: the pool with, when it is sized, the
// pool controller's status (compute_poolctl; absent until the controller
// first saw the pool). Errors: INVALID_INPUT (path id), NOT_FOUND,
// UNAVAILABLE.
func (s *service) getPool(ctx context.Context, req *bus.Request) (any, error) {
	var in api.IDRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	p, _, err := s.pools.get(ctx, req.Tenant, "id", in.ID)
	if err != nil {
		return nil, err
	}
	if p.Sizes == nil {
		return p, nil
	}
	c, _, err := s.control.Get(ctx, req.Tenant, in.ID)
	switch {
	case err == nil:
		p.Status = &c.Status
	case !api.IsCode(err, api.CodeNotFound):
		return nil, err
	}
	return p, nil
}

// changePool applies change to pool id of tenant at version (0: any),
// bumps its version and writes it (CAS). Errors: those of change,
// INVALID_INPUT (path id), NOT_FOUND, CONFLICT (path version),
// INVALID_STATE while the pool is being deleted, UNAVAILABLE.
func (s *service) changePool(ctx context.Context, tenant, id string, version int64, change func(*api.Pool) error) (api.Pool, error) {
	return s.pools.mutate(ctx, tenant, id, func(p *api.Pool) error {
		if version != 0 && version != p.Version {
			return api.Errorf(api.CodeConflict, "pool %s is at version %d, not %d: read it again", p.ID, p.Version, version).
				WithPath("version")
		}
		if p.DeletionRequestedAt != nil {
			return api.Errorf(api.CodeInvalidState, "pool %s is being deleted", p.ID)
		}
		if err := change(p); err != nil {
			return err
		}
		p.Status = nil
		p.Version++
		return nil
	})
}

// addRevision makes tmpl (nil: the empty template) p's next revision and
// its template, keeping the PoolRevisionsKept newest revisions.
func addRevision(p *api.Pool, tmpl *api.PoolTemplate, rollbackOf int64, now time.Time) {
	t := api.PoolTemplate{}
	if tmpl != nil {
		t = *tmpl
	}
	p.Revision++
	p.Template = &t
	revs := append(slices.Clone(p.Revisions), api.PoolRevision{Revision: p.Revision, Template: t, CreatedAt: now, RollbackOf: rollbackOf})
	if len(revs) > api.PoolRevisionsKept {
		revs = revs[len(revs)-api.PoolRevisionsKept:]
	}
	p.Revisions = revs
}

// sameTemplate reports whether the pool's template cur equals next (nil
// counts as the empty template; no labels equals empty labels).
func sameTemplate(cur, next *api.PoolTemplate) bool {
	norm := func(t *api.PoolTemplate) api.PoolTemplate {
		if t == nil {
			return api.PoolTemplate{}
		}
		c := *t
		if len(c.Labels) == 0 {
			c.Labels = nil
		}
		if len(c.SSHKeys) == 0 {
			c.SSHKeys = nil
		}
		return c
	}
	return reflect.DeepEqual(norm(cur), norm(next))
}

func revisionList(p *api.Pool) string {
	var b strings.Builder
	for i, r := range p.Revisions {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, r.Revision)
	}
	return b.String()
}

// checkFlavorImages refuses a template without an image for a pool with a
// sized flavor (size > 0) that has none: INVALID_INPUT path template.image.
func checkFlavorImages(p *api.Pool) error {
	for _, f := range p.Flavors {
		if f.Image == "" && p.Sizes[f.Name] > 0 {
			return api.InvalidInput("template.image", "template.image is required: flavor %q has no image", f.Name)
		}
	}
	return nil
}

// labelKey and labelValue are Kubernetes label syntax: an optional DNS
// prefix and "/", then a name of at most 63 characters; a value of at most
// 63 characters.
var (
	labelName  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValue = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
	dnsPrefix  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
)

// poolLabelPrefix is the prefix of the labels the controller sets itself.
var poolLabelPrefix = api.LabelPoolID[:strings.Index(api.LabelPoolID, "/")+1]

// checkPoolUpdate checks what needs no lookup. Errors: INVALID_INPUT
// naming the field.
func checkPoolUpdate(in *api.PoolUpdateRequest) error {
	if err := checkID(api.PrefixPool, "id", in.ID); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(in.Sizes)) {
		if n := in.Sizes[name]; n < 0 || n > api.MaxPoolSize {
			return api.InvalidInput("sizes."+name, "sizes.%s must be 0 to %d", name, api.MaxPoolSize)
		}
	}
	if r := in.Rollout; r != nil {
		switch {
		case r.MaxSurge < 0 || r.MaxSurge > api.MaxPoolSize:
			return api.InvalidInput("rollout.maxSurge", "rollout.maxSurge must be 0 to %d", api.MaxPoolSize)
		case r.MaxUnavailable < 0 || r.MaxUnavailable > api.MaxPoolSize:
			return api.InvalidInput("rollout.maxUnavailable", "rollout.maxUnavailable must be 0 to %d", api.MaxPoolSize)
		case r.MaxSurge == 0 && r.MaxUnavailable == 0:
			return api.InvalidInput("rollout.maxUnavailable",
				"rollout.maxSurge and rollout.maxUnavailable must not both be 0: nothing could be replaced")
		}
	}
	if t := in.Template; t != nil {
		if err := api.CheckImage("template.image", t.Image, false); err != nil {
			return err
		}
		if len(t.Labels) > api.MaxPoolTemplateLabels {
			return api.InvalidInput("template.labels", "at most %d labels", api.MaxPoolTemplateLabels)
		}
		for _, k := range slices.Sorted(maps.Keys(t.Labels)) {
			if err := checkLabel(k, t.Labels[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkLabel checks one template label. Error: INVALID_INPUT path
// template.labels.<key>.
func checkLabel(k, v string) error {
	path := "template.labels." + k
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	switch {
	case hasPrefix && !dnsPrefix.MatchString(prefix), !labelName.MatchString(name):
		return api.InvalidInput(path, "label key %q is not a Kubernetes label key ([prefix/]name, name at most 63 characters)", k)
	case strings.HasPrefix(k, poolLabelPrefix):
		return api.InvalidInput(path, "labels under %s are set by the pool controller", poolLabelPrefix)
	case !labelValue.MatchString(v):
		return api.InvalidInput(path, "label value %q: at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric", v)
	}
	return nil
}
