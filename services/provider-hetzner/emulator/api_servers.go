package emulator

import (
	"crypto/rand"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"

	"better-compute.io/compute/pkg/api"
)

// maxCachedSelectors bounds the label selector parse cache.
const maxCachedSelectors = 1024

// selectorLocked parses a label selector, cached. Callers hold e.mu.
func (e *Emulator) selectorLocked(raw string) (api.Selector, error) {
	if sel, found := e.st.selectors[raw]; found {
		return sel, nil
	}
	sel, err := parseSelector(raw)
	if err != nil {
		return nil, err
	}
	if len(e.st.selectors) >= maxCachedSelectors {
		clear(e.st.selectors)
	}
	e.st.selectors[raw] = sel
	return sel, nil
}

// querySelectorLocked parses q's label_selector (cached); valid is false
// with a 400 invalid_input answer naming label_selector when it is
// malformed. Callers hold e.mu.
func (e *Emulator) querySelectorLocked(q url.Values) (api.Selector, reply, bool) {
	sel, err := e.selectorLocked(q.Get("label_selector"))
	if err != nil {
		return nil, invalidInput(http.StatusBadRequest, []fieldError{field("label_selector", err.Error())}), false
	}
	return sel, reply{}, true
}

// serverLocked finds the server of a path id. Callers hold e.mu.
func (e *Emulator) serverLocked(raw string) (*server, reply, bool) {
	if id, valid := parseID(raw); valid {
		if srv := e.st.servers[id]; srv != nil {
			return srv, reply{}, true
		}
	}
	return nil, notFound("server"), false
}

// withServer runs f on the server of a path id with e.mu held and every
// action settled at now; 404 not_found when there is no such server.
func (e *Emulator) withServer(raw string, f func(srv *server, now time.Time) reply) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	e.settleLocked(now)
	srv, rep, found := e.serverLocked(raw)
	if !found {
		return rep
	}
	return f(srv, now)
}

// lockedReply is the answer to an action on a server busy with another.
//
// This is the emulator's reading of the API: a server runs one action at a
// time, and a conflicting request (power, rebuild, delete) answers 423
// locked until the running action completes.
func lockedReply(srv *server) reply {
	return errorReply(http.StatusLocked, "locked",
		fmt.Sprintf("server %d is locked by a running action", srv.id), nil)
}

// listServers serves GET /servers (filters: label_selector, name, status;
// pages of per_page, at most 50). A server younger than Options.ListLag is
// left out.
//
// Guess: sort is ignored; servers always come by ascending id.
func (e *Emulator) listServers(r *http.Request, _ string) reply {
	q := r.URL.Query()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settleLocked(e.clock.Now())
	sel, rep, valid := e.querySelectorLocked(q)
	if !valid {
		return rep
	}
	candidates := e.st.order
	if name := q.Get("name"); name != "" {
		candidates = nil
		if srv := e.st.names[name]; srv != nil {
			candidates = []*server{srv}
		}
	}
	statuses := q["status"]
	listedBefore := e.clock.Now().Add(-e.listLag)
	matched := make([]*server, 0, len(candidates))
	for _, srv := range candidates {
		if (len(statuses) == 0 || slices.Contains(statuses, srv.status)) && sel.Matches(srv.labels) &&
			(e.listLag <= 0 || !srv.created.After(listedBefore)) {
			matched = append(matched, srv)
		}
	}
	out, m := pageOf(matched, q, (*server).toSchema)
	return ok(struct {
		Servers []serverJSON `json:"servers"`
		Meta    meta         `json:"meta"`
	}{out, m})
}

// getServer serves GET /servers/{id}.
func (e *Emulator) getServer(_ *http.Request, raw string) reply {
	return e.withServer(raw, func(srv *server, _ time.Time) reply {
		return ok(struct {
			Server serverJSON `json:"server"`
		}{srv.toSchema()})
	})
}

// validHostname reports whether name is an RFC 1123 hostname, which the
// API requires of server names.
func validHostname(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || !isAlnum(label[0]) || !isAlnum(label[len(label)-1]) {
			return false
		}
		for i := range len(label) {
			if !isAlnum(label[i]) && label[i] != '-' {
				return false
			}
		}
	}
	return true
}

// validateName checks a server name; the empty name is reported as missing.
func validateName(name string) []fieldError {
	switch {
	case name == "":
		return []fieldError{field("name", "Missing data for required field.")}
	case !validHostname(name):
		return []fieldError{field("name", "Name must be a valid hostname.")}
	}
	return nil
}

// validateLabels checks label keys and values.
func validateLabels(labels map[string]string) []fieldError {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if api.CheckLabelKeySyntax(k) != nil || api.CheckLabelValue(labels[k]) != nil {
			return []fieldError{field("labels", fmt.Sprintf("invalid label %q", k))}
		}
	}
	return nil
}

// uniquenessReply is the answer to a taken server name.
//
// Guess: details name the field, like invalid_input.
func uniquenessReply() reply {
	return errorReply(http.StatusConflict, "uniqueness_error", "server name is already used",
		fieldDetails{Fields: []fieldError{field("name", "is already used")}})
}

// createResponse is the reply of POST /servers.
type createResponse struct {
	Server       serverJSON      `json:"server"`
	Action       schema.Action   `json:"action"`
	NextActions  []schema.Action `json:"next_actions"`
	RootPassword *string         `json:"root_password"`
}

// createServer serves POST /servers. Invalid or unknown name, server type,
// image, location, labels, networks, firewalls or placement group answer
// 422 invalid_input listing every bad field; a type not orderable in the
// location, or a location out of capacity (SetLocationFull), 412
// resource_unavailable; the network part's refusals (checkPlacementLocked)
// 422; a taken name 409 uniqueness_error. The server gets the networks'
// addresses, the firewalls and the placement group at once, and no public
// IPv4 (IPv6) when public_net disables it. The server starts "initializing" with a
// create_server action and, unless start_after_create is false, a
// start_server next action. Both end after ActionDuration: the server is
// then running (off without start_after_create). If create_server fails
// (FailNextAction), the emulator's choice is that the server stays, off and
// unlocked, with its name taken, and the start_server fails with the same
// error: the caller must notice and delete it.
func (e *Emulator) createServer(r *http.Request, _ string) reply {
	var req schema.ServerCreateRequest
	if rep, valid := decodeJSON(r, &req, false); !valid {
		return rep
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	e.settleLocked(now)

	fields := validateName(req.Name)
	typ := e.typeByIDOrName(req.ServerType)
	if typ == nil {
		fields = append(fields, field("server_type", "server type not found"))
	}
	arch := ""
	if typ != nil {
		arch = typ.architecture
	}
	img := e.imageFor(req.Image, arch)
	switch {
	case img == nil:
		fields = append(fields, field("image", "image not found"))
	case arch != "" && img.architecture != arch:
		// Guess: an image id of the other architecture is invalid input.
		fields = append(fields, field("image", "image architecture does not match server type"))
	}
	var loc *location
	if req.Location != "" {
		if loc = e.locationByName(req.Location); loc == nil {
			fields = append(fields, field("location", "location not found"))
		}
	}
	labels := map[string]string{}
	if req.Labels != nil {
		labels = maps.Clone(*req.Labels)
		fields = append(fields, validateLabels(labels)...)
	}
	sn, netFields := e.serverNetLocked(&req)
	fields = append(fields, netFields...)
	if len(fields) > 0 {
		return invalidInput(http.StatusUnprocessableEntity, fields)
	}
	if loc == nil {
		loc = defaultLocation(typ)
	}
	// Guess: a type not offered, sold out, or past its deprecation is
	// unavailable (412), not invalid input.
	if loc == nil {
		return errorReply(http.StatusPreconditionFailed, "resource_unavailable",
			fmt.Sprintf("server type %s is unavailable in every location", typ.name), nil)
	}
	if tl := typ.in(loc.Name); tl == nil || !tl.available {
		return errorReply(http.StatusPreconditionFailed, "resource_unavailable",
			fmt.Sprintf("server type %s is unavailable in %s", typ.name, loc.Name), nil)
	}
	nets, refused := e.checkPlacementLocked(&sn, loc)
	if refused != nil {
		return *refused
	}
	if e.st.names[req.Name] != nil {
		return uniquenessReply()
	}
	if e.st.serverLimit > 0 && len(e.st.servers) >= e.st.serverLimit {
		return serverLimitReply()
	}

	// The actions record "off" as the status to fall back to if they fail.
	srv := e.addServerLocked(req.Name, statusOff, typ, loc, img, labels, now)
	srv.attachLocked(&sn, nets)
	e.startSSHLocked(srv)
	srv.startAfterCreate = req.StartAfterCreate == nil || *req.StartAfterCreate
	resp := createResponse{Action: e.startActionLocked(cmdCreate, srv, now).toSchema(now), NextActions: []schema.Action{}}
	if srv.startAfterCreate {
		start := e.startActionLocked(cmdStart, srv, now)
		start.afterCreate = true
		resp.NextActions = append(resp.NextActions, start.toSchema(now))
	}
	srv.status = statusInitializing
	resp.Server = srv.toSchema()
	if len(req.SSHKeys) == 0 {
		// The API only reveals a root password when no SSH key was given.
		pw := rand.Text()
		resp.RootPassword = &pw
	}
	return reply{status: http.StatusCreated, body: resp}
}

// serverLimitReply is the answer to a create beyond the project's server
// quota (Options.ServerLimit): 403 resource_limit_exceeded, as the real API
// answers it ("server limit exceeded", details.limits[{name}]).
//
// Guess: the limit's name is "server_limit" (the API documents
// details.limits[{name}] with names such as project_limit).
func serverLimitReply() reply {
	return errorReply(http.StatusForbidden, "resource_limit_exceeded", "server limit exceeded",
		limitDetails{Limits: []limitName{{Name: "server_limit"}}})
}

// limitDetails are the details of resource_limit_exceeded.
type limitDetails struct {
	Limits []limitName `json:"limits"`
}

// limitName names one exceeded limit.
type limitName struct {
	Name string `json:"name"`
}

// defaultLocation picks the location for a create without one.
//
// Guess: the real API picks some location where the type is orderable; the
// emulator takes the first by id.
func defaultLocation(t *serverType) *location {
	for _, tl := range t.locations {
		if tl.available {
			return tl.loc
		}
	}
	return nil
}

// updateServer serves PUT /servers/{id}: rename and/or replace labels.
func (e *Emulator) updateServer(r *http.Request, raw string) reply {
	var req schema.ServerUpdateRequest
	if rep, valid := decodeJSON(r, &req, false); !valid {
		return rep
	}
	return e.withServer(raw, func(srv *server, _ time.Time) reply {
		var fields []fieldError
		if req.Name != "" {
			fields = validateName(req.Name)
		}
		if req.Labels != nil {
			fields = append(fields, validateLabels(*req.Labels)...)
		}
		if len(fields) > 0 {
			return invalidInput(http.StatusUnprocessableEntity, fields)
		}
		if req.Name != "" && req.Name != srv.name {
			if e.st.names[req.Name] != nil {
				return uniquenessReply()
			}
			delete(e.st.names, srv.name)
			srv.name = req.Name
			e.st.names[srv.name] = srv
		}
		if req.Labels != nil {
			srv.labels = maps.Clone(*req.Labels)
		}
		return ok(struct {
			Server serverJSON `json:"server"`
		}{srv.toSchema()})
	})
}

// deleteServer serves DELETE /servers/{id}: the server is "deleting" until
// its delete_server action completes, then gone (its name free again).
//
// Guess: the reference does not say when a deleted server's name is free.
// The emulator keeps it taken, and the server listed (GET /servers?name=
// shows it "deleting"), until the action ends, so a create of the same
// name meanwhile answers 409 uniqueness_error, as seen in the field (issue
// 11: "delete w1, create w1 at once").
func (e *Emulator) deleteServer(_ *http.Request, raw string) reply {
	return e.withServer(raw, func(srv *server, now time.Time) reply {
		if srv.running > 0 {
			return lockedReply(srv)
		}
		a := e.startActionLocked(cmdDelete, srv, now)
		srv.status = statusDeleting
		return ok(schema.ServerDeleteResponse{Action: a.toSchema(now)})
	})
}

// serverActions maps each action path name to its command and the status
// the server shows while it runs ("" keeps the current status).
var serverActions = map[string]struct{ command, during string }{
	"poweron":  {cmdStart, statusStarting},
	"poweroff": {cmdStop, statusStopping},
	"shutdown": {cmdShutdown, statusStopping},
	"reboot":   {cmdReboot, ""},
	"reset":    {cmdReset, ""},
	"rebuild":  {cmdRebuild, statusRebuilding},
}

// serverAction serves POST /servers/{id}/actions/{name}. Rebuild takes
// {"image": id or name} and also answers a root password.
func (e *Emulator) serverAction(r *http.Request, raw, name string) reply {
	var req schema.ServerActionRebuildRequest
	if rep, valid := decodeJSON(r, &req, name != "rebuild"); !valid {
		return rep
	}
	return e.withServer(raw, func(srv *server, now time.Time) reply {
		var img *image
		if name == "rebuild" {
			if img = e.imageFor(req.Image, srv.typ.architecture); img == nil || img.architecture != srv.typ.architecture {
				return invalidInput(http.StatusUnprocessableEntity, []fieldError{field("image", "image not found")})
			}
		}
		if srv.running > 0 {
			return lockedReply(srv)
		}
		spec := serverActions[name]
		a := e.startActionLocked(spec.command, srv, now)
		if spec.during != "" {
			srv.status = spec.during
		}
		if img == nil {
			return ok(struct {
				Action schema.Action `json:"action"`
			}{a.toSchema(now)})
		}
		srv.img = img
		return ok(schema.ServerActionRebuildResponse{Action: a.toSchema(now), RootPassword: ptr(rand.Text())})
	})
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// listServerActions serves GET /servers/{id}/actions (filter: status).
func (e *Emulator) listServerActions(r *http.Request, raw string) reply {
	return e.withServer(raw, func(srv *server, now time.Time) reply {
		return actionsReply(srv.actions, r.URL.Query(), now)
	})
}
