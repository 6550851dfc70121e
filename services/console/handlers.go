package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"better-compute.io/compute/pkg/api"
)

// maxCredsBytes bounds the pasted creds text (a .creds file is ~1 KiB).
const maxCredsBytes = 16 << 10

// signInView is the sign-in form's data: what the user typed that may be
// shown again (never the creds) and the last failure.
type signInView struct {
	Tenant string
	Token  string
	Err    *api.ComputeError
}

// signInForm shows the form, with a fresh CSRF cookie when it has none.
func (s *Server) signInForm(w http.ResponseWriter, r *http.Request) {
	s.renderSignIn(w, r, http.StatusOK, signInView{})
}

func (s *Server) renderSignIn(w http.ResponseWriter, r *http.Request, status int, v signInView) {
	tok := ""
	if c, err := r.Cookie(signInCSRFCookie); err == nil && c.Value != "" {
		tok = c.Value
	} else {
		tok = newToken()
		http.SetCookie(w, s.cookie(r, signInCSRFCookie, tok, "/signin"))
	}
	v.Token = tok
	s.render(w, r, status, "signin", nil, view{Title: "Sign in", Data: v})
}

// signIn checks the form, connects as the tenant and starts a session.
// Errors re-render the form: INVALID_INPUT naming the field, the
// Dialer's ACCESS_DENIED or UNAVAILABLE, or a stale CSRF token.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		v := signInView{Err: api.InvalidInput("", "the form is unreadable or larger than %d bytes", maxFormBytes)}
		s.renderSignIn(w, r, http.StatusBadRequest, v)
		return
	}
	v := signInView{Tenant: strings.TrimSpace(r.PostFormValue("tenant"))}
	c, err := r.Cookie(signInCSRFCookie)
	if err != nil || !tokensEqual(r.PostFormValue("csrf"), c.Value) {
		v.Err = api.Errorf(api.CodeAccessDenied, "the form's CSRF token is missing or stale: submit the form again")
		s.renderSignIn(w, r, http.StatusForbidden, v)
		return
	}
	creds := Credentials{Tenant: v.Tenant, Creds: r.PostFormValue("creds")}
	if v.Err = checkCredentials(creds); v.Err != nil {
		s.renderSignIn(w, r, http.StatusBadRequest, v)
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	t, err := s.o.Dial(ctx, creds)
	if err == nil {
		err = s.startSession(w, r, t)
	}
	if err != nil {
		v.Err = api.AsComputeError(err)
		s.o.Logger.Info().Str("tenant", v.Tenant).Str("code", string(v.Err.Code)).Msg("sign-in refused")
		s.renderSignIn(w, r, httpStatus(v.Err.Code), v)
		return
	}
	s.o.Logger.Info().Str("tenant", v.Tenant).Msg("signed in")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// checkCredentials refuses a form the Dialer cannot use. Errors:
// INVALID_INPUT with details.path tenant or creds.
func checkCredentials(c Credentials) *api.ComputeError {
	switch {
	case !api.ValidTenant(c.Tenant):
		return api.InvalidInput("tenant", "tenant %q is not a tenant id: 1 to 63 lower-case letters, digits and '-', "+
			"starting with a letter or digit", c.Tenant)
	case strings.TrimSpace(c.Creds) == "":
		return api.InvalidInput("creds", "creds: paste the text of the tenant's .creds file or load it from a file")
	case len(c.Creds) > maxCredsBytes:
		return api.InvalidInput("creds", "creds: %d bytes, more than a creds file's %d", len(c.Creds), maxCredsBytes)
	}
	return nil
}

// startSession subscribes to the tenant's events and sets the session
// cookie. Errors: WatchEvents', UNAVAILABLE when Options.MaxSessions are
// held (the tenant's connection is closed then).
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, t Tenant) error {
	sess := &session{token: newToken(), csrf: newToken(), tenant: t, lastSeen: s.o.Clock.Now(),
		subs: map[chan api.Event]struct{}{}}
	stop, err := t.WatchEvents(sess.record)
	if err != nil {
		t.Close()
		return err
	}
	sess.stop = stop
	// A sign-in over a live session ends that one: one browser, one session.
	if old, err := r.Cookie(SessionCookie); err == nil {
		s.sessions.remove(old.Value)
	}
	if err := s.sessions.add(sess, s.o.MaxSessions); err != nil {
		sess.close()
		return err
	}
	http.SetCookie(w, s.cookie(r, SessionCookie, sess.token, "/"))
	return nil
}

// cookie is an HttpOnly, SameSite=Strict cookie (Secure behind TLS).
func (s *Server) cookie(r *http.Request, name, value, path string) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"}
}

// signOut ends the session and its connection.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request, sess *session) {
	s.sessions.remove(sess.token)
	c := s.cookie(r, SessionCookie, "", "/")
	c.MaxAge = -1
	http.SetCookie(w, c)
	s.o.Logger.Info().Str("tenant", sess.tenant.ID()).Msg("signed out")
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// poolPhases is one row of the overview: a pool's instance count per
// phase (in api.Phases order) and in all.
type poolPhases struct {
	Pool   api.Pool
	Name   string
	Counts []int
	Total  int
}

// overviewView is the overview: a row per pool, the totals, the recent
// events.
type overviewView struct {
	Phases []api.Phase
	Pools  []poolPhases
	Totals poolPhases
	Events []api.Event
}

// recentEvents is how many events the overview shows.
const recentEvents = 10

// sseHeartbeat is how often an idle event stream sends a comment, so
// proxies keep it open.
const sseHeartbeat = 25 * time.Second

func (s *Server) overview(w http.ResponseWriter, r *http.Request, sess *session) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	pools, instances, err := fleet(ctx, sess.tenant)
	if err != nil {
		s.renderError(w, r, sess, err)
		return
	}
	phases := api.Phases()
	v := overviewView{Phases: phases, Totals: poolPhases{Name: "all pools", Counts: make([]int, len(phases))}}
	row := map[string]int{}
	for _, p := range pools {
		row[p.ID] = len(v.Pools)
		v.Pools = append(v.Pools, poolPhases{Pool: p, Name: poolName(p), Counts: make([]int, len(phases))})
	}
	for _, inst := range instances {
		i, ok := row[inst.PoolID]
		if !ok { // its pool is gone
			row[inst.PoolID] = len(v.Pools)
			i = len(v.Pools)
			v.Pools = append(v.Pools, poolPhases{Pool: api.Pool{ID: inst.PoolID}, Name: inst.PoolID, Counts: make([]int, len(phases))})
		}
		if k := slices.Index(phases, inst.Status.Phase); k >= 0 {
			v.Pools[i].Counts[k]++
			v.Totals.Counts[k]++
		}
		v.Pools[i].Total++
		v.Totals.Total++
	}
	v.Events = sess.eventsOf("")
	v.Events = v.Events[:min(len(v.Events), recentEvents)]
	s.render(w, r, http.StatusOK, "overview", sess, view{Title: "Overview", Nav: "overview", Live: true, Data: v})
}

// fleet reads the tenant's pools and instances.
func fleet(ctx context.Context, t Tenant) ([]api.Pool, []api.Instance, error) {
	pools, err := t.Pools(ctx)
	if err != nil {
		return nil, nil, err
	}
	instances, err := t.Instances(ctx)
	if err != nil {
		return nil, nil, err
	}
	return pools, instances, nil
}

// instanceRow is one line of the instance list.
type instanceRow struct {
	api.Instance
	PoolName string
	Ready    *api.Condition
}

// instancesView is the instance list and its filters.
type instancesView struct {
	Pools  []api.Pool
	Phases []api.Phase
	Pool   string
	Phase  api.Phase
	Rows   []instanceRow
}

// instances lists the instances, filtered by ?pool=<pool id> and
// ?phase=<phase>. Errors: INVALID_INPUT naming pool or phase.
func (s *Server) instances(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	v := instancesView{Phases: api.Phases(), Pool: q.Get("pool"), Phase: api.Phase(q.Get("phase"))}
	if v.Pool != "" && !api.ValidID(api.PrefixPool, v.Pool) {
		s.renderError(w, r, sess, api.InvalidInput("pool", "pool %q is not a pool id (pool_…)", v.Pool))
		return
	}
	if v.Phase != "" && !slices.Contains(v.Phases, v.Phase) {
		s.renderError(w, r, sess, api.InvalidInput("phase", "phase %q is not one of %v", v.Phase, v.Phases))
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	pools, instances, err := fleet(ctx, sess.tenant)
	if err != nil {
		s.renderError(w, r, sess, err)
		return
	}
	v.Pools = pools
	names := map[string]string{}
	for _, p := range pools {
		names[p.ID] = poolName(p)
	}
	for _, inst := range instances {
		if (v.Pool != "" && inst.PoolID != v.Pool) || (v.Phase != "" && inst.Status.Phase != v.Phase) {
			continue
		}
		v.Rows = append(v.Rows, instanceRow{Instance: inst, PoolName: names[inst.PoolID], Ready: condition(inst, api.ConditionReady)})
	}
	s.render(w, r, http.StatusOK, "instances", sess, view{Title: "Instances", Nav: "instances", Live: true, Data: v})
}

// condition is the instance's condition of type typ, or nil.
func condition(inst api.Instance, typ api.ConditionType) *api.Condition {
	for i, c := range inst.Status.Conditions {
		if c.Type == typ {
			return &inst.Status.Conditions[i]
		}
	}
	return nil
}

// instanceView is one instance's page.
type instanceView struct {
	Instance *api.Instance
	PoolName string
	Events   []api.Event
	// Chart is the machine's cpu over the last hour (nil: no machine yet).
	Chart *chart
}

// instance shows one instance. Errors: INVALID_INPUT naming id,
// NOT_FOUND, the services'.
func (s *Server) instance(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	if !api.ValidID(api.PrefixInstance, id) {
		s.renderError(w, r, sess, api.InvalidInput("id", "%q is not an instance id (inst_…)", id))
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	inst, err := sess.tenant.Instance(ctx, id)
	if err != nil {
		s.renderError(w, r, sess, err)
		return
	}
	v := instanceView{Instance: inst, PoolName: inst.PoolID, Events: sess.eventsOf(id)}
	if inst.Status.Machine != nil {
		now := s.o.Clock.Now()
		c := sess.chartFor(id, now, func() chart {
			m, err := sess.tenant.Metrics(ctx, id, api.MetricsWindow{Type: api.MetricsCPU, From: now.Add(-chartWindow), To: now})
			if err != nil {
				return chart{Err: api.AsComputeError(err)}
			}
			return newChart(m)
		})
		v.Chart = &c
	}
	if pools, err := sess.tenant.Pools(ctx); err == nil {
		if i := slices.IndexFunc(pools, func(p api.Pool) bool { return p.ID == inst.PoolID }); i >= 0 {
			v.PoolName = poolName(pools[i])
		}
	}
	title := inst.Name
	if title == "" {
		title = inst.ID
	}
	s.render(w, r, http.StatusOK, "instance", sess, view{Title: title, Nav: "instances", Live: true, Data: v})
}

// accountOffers is one account's offers (sorted by price), or why they
// could not be read.
type accountOffers struct {
	Account api.Account
	Offers  []api.Offer
	Err     *api.ComputeError
}

// readOffers reads the offers of every account; an account whose offers
// fail keeps its error and the others are still shown.
func readOffers(ctx context.Context, t Tenant) ([]accountOffers, error) {
	accounts, err := t.Accounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]accountOffers, len(accounts))
	for i, a := range accounts {
		out[i].Account = a
		offers, err := t.Offers(ctx, a.ID)
		if err != nil {
			out[i].Err = api.AsComputeError(err)
			continue
		}
		api.SortOffersByPrice(offers)
		out[i].Offers = offers
	}
	return out, nil
}

func (s *Server) offers(w http.ResponseWriter, r *http.Request, sess *session) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	accounts, err := readOffers(ctx, sess.tenant)
	if err != nil {
		s.renderError(w, r, sess, err)
		return
	}
	s.render(w, r, http.StatusOK, "offers", sess, view{Title: "Offers", Nav: "offers", Data: accounts})
}

// costView is the cost page: the report and the accounts whose offers
// could not be read (their instances count as Unknown).
type costView struct {
	Report        CostReport
	HoursPerMonth int
	Failed        []accountOffers
}

func (s *Server) cost(w http.ResponseWriter, r *http.Request, sess *session) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	pools, instances, err := fleet(ctx, sess.tenant)
	if err != nil {
		s.renderError(w, r, sess, err)
		return
	}
	accounts, err := readOffers(ctx, sess.tenant)
	if err != nil {
		s.renderError(w, r, sess, err)
		return
	}
	v := costView{HoursPerMonth: api.HoursPerMonth}
	offers := map[string][]api.Offer{}
	for _, a := range accounts {
		if a.Err != nil {
			v.Failed = append(v.Failed, a)
		}
		offers[a.Account.ID] = a.Offers
	}
	v.Report = Cost(pools, instances, offers)
	s.render(w, r, http.StatusOK, "cost", sess, view{Title: "Cost", Nav: "cost", Live: true, Data: v})
}

// events streams the session's events as Server-Sent Events (event
// "compute", data the api.Event JSON) until the client goes or the
// session ends (event "signedout").
func (s *Server) events(w http.ResponseWriter, r *http.Request, sess *session) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch, cancel := sess.subscribe()
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	_, _ = fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	heartbeat := time.NewTicker(sseHeartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-heartbeat.C:
			_, _ = fmt.Fprint(w, ": keep-alive\n\n")
		case ev, open := <-ch:
			if !open {
				_, _ = fmt.Fprint(w, "event: signedout\ndata: {}\n\n")
				flusher.Flush()
				return
			}
			data, _ := json.Marshal(ev)
			_, _ = fmt.Fprintf(w, "event: compute\ndata: %s\n\n", data)
		}
		flusher.Flush()
	}
}
