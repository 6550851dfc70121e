package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"time"

	"better-compute.io/compute/pkg/api"
)

// page is one page's templates: the layout and the page's "main".
type page struct{ t *template.Template }

// pageNames are the pages, one templates/<name>.html each.
var pageNames = []string{"signin", "overview", "instances", "instance", "offers", "cost", "error"}

// funcs are the template functions.
var funcs = template.FuncMap{
	"money":         formatMoney,
	"price":         formatPrice,
	"monthly":       monthly,
	"time":          formatTime,
	"phaseClass":    func(p api.Phase) string { return "phase-" + strings.ToLower(string(p)) },
	"join":          strings.Join,
	"hoursPerMonth": func() int { return api.HoursPerMonth },
}

func parsePages() map[string]*page {
	pages := map[string]*page{}
	for _, n := range pageNames {
		t := template.Must(template.New(n).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+n+".html"))
		pages[n] = &page{t: t}
	}
	return pages
}

// view is what every page template gets: the page's title and navigation
// key, the session's tenant and CSRF token (empty before sign-in), and
// the page's own Data.
type view struct {
	Title  string
	Nav    string
	Tenant string
	CSRF   string
	Live   bool // the page refreshes on events
	Data   any
}

// render writes page name with v: the whole page, or its main section
// only for a live refresh (fragmentHeader). It renders into a buffer
// first, so a template failure is a clean 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, sess *session, v view) {
	if sess != nil {
		v.Tenant, v.CSRF = sess.tenant.ID(), sess.csrf
	}
	tmpl := "layout"
	if r.Header.Get(fragmentHeader) != "" {
		tmpl = "main"
	}
	var buf bytes.Buffer
	if err := s.pages[name].t.ExecuteTemplate(&buf, tmpl, v); err != nil {
		s.o.Logger.Error().Err(err).Str("page", name).Msg("page not rendered")
		http.Error(w, "INTERNAL: page not rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// renderError renders err as its ComputeError code and message (and the
// field at fault), with the HTTP status of the code.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, sess *session, err error) {
	ce := api.AsComputeError(err)
	s.o.Logger.Info().Str("path", r.URL.Path).Str("code", string(ce.Code)).Msg("page failed")
	s.render(w, r, httpStatus(ce.Code), "error", sess, view{Title: string(ce.Code), Data: ce})
}

// httpStatus is the HTTP status a page failing with code answers: the
// code's status in the error catalogue (api.Catalogue).
func httpStatus(code api.Code) int { return code.Info().Status }

// formatMoney prints an amount per currency ("0.0081 EUR"), currencies
// sorted, with digits decimals; "—" when empty.
func formatMoney(m Money, digits int) string {
	if len(m) == 0 {
		return "—"
	}
	cur := make([]string, 0, len(m))
	for c := range m {
		cur = append(cur, c)
	}
	sort.Strings(cur)
	parts := make([]string, len(cur))
	for i, c := range cur {
		parts[i] = strings.TrimSpace(fmt.Sprintf("%.*f %s", digits, m[c], c))
	}
	return strings.Join(parts, " + ")
}

// formatPrice prints a price (nil: "no price") with digits decimals.
func formatPrice(p *float64, currency string, digits int) string {
	if p == nil {
		return "no price"
	}
	return strings.TrimSpace(fmt.Sprintf("%.*f %s", digits, *p, currency))
}

// monthly is api.HoursPerMonth × an hourly price (nil stays nil).
func monthly(p *float64) *float64 {
	if p == nil {
		return nil
	}
	m := *p * api.HoursPerMonth
	return &m
}

// formatTime prints t in UTC to the second ("" for the zero time).
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
