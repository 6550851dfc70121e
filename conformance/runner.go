package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Options tune a run. The zero value is usable.
type Options struct {
	// Progress receives one line per behaviour as it ends, and its
	// measured figures (nil: silent).
	Progress io.Writer
	// Seed drives every random choice of the run (0: picked from the clock);
	// the report records it.
	Seed uint64
	// Only restricts the run to these behaviour ids; required behaviours
	// left out are INCOMPLETE.
	Only []string
	// BehaviourTimeout bounds one behaviour (default 5 min; the scale lane
	// gets four times as long).
	BehaviourTimeout time.Duration
	// CallTimeout bounds one provider call (default 30 s).
	CallTimeout time.Duration
}

// run is one conformance run: the subject, what describe answered, the
// reply tap, the shared seeded inventory and the report being built.
type run struct {
	s      Subject
	opts   Options
	prefix string
	remote provider.Remote
	desc   *api.ProviderDescription
	// descErr is describe's error (desc is then nil).
	descErr error
	tap     *tap

	rngMu sync.Mutex
	rng   *mrand.Rand

	seedMu sync.Mutex
	seeded []string // ids of the shared seeded inventory

	mu      sync.Mutex
	cleaned map[string]bool // machine ids with a cleanup registered
	gone    map[string]bool // machine ids a behaviour deleted or removed
	report  Report
	// redacted lists the behaviours whose log or reason held a secret
	// value, cut out before it reached the report.
	redacted []string
}

var prefixPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,15}$`)

// newRun checks the subject, fills defaults, asks describe and starts the
// reply tap. Errors: a subject the program cannot use.
func newRun(ctx context.Context, s Subject, o Options) (*run, error) {
	switch {
	case s.NC == nil:
		return nil, errors.New("conformance: Subject.NC is required")
	case s.ProviderID == "":
		return nil, errors.New("conformance: Subject.ProviderID is required")
	case s.OfferID == "" || s.Image == "":
		return nil, errors.New("conformance: Subject.OfferID and Subject.Image are required")
	case s.Prefix != "" && !prefixPattern.MatchString(s.Prefix):
		return nil, fmt.Errorf("conformance: Subject.Prefix %q must match %s", s.Prefix, prefixPattern)
	}
	if len(s.Profiles) == 0 {
		s.Profiles = []string{ProfileCore}
	}
	for _, p := range s.Profiles {
		if !slices.Contains(Profiles, p) {
			return nil, fmt.Errorf("conformance: unknown profile %q (want some of %s)", p, strings.Join(Profiles, ", "))
		}
	}
	if s.ScaleMachines <= 0 {
		s.ScaleMachines = DefaultScaleMachines
	}
	if o.Seed == 0 { // 53 bits, so JSON readers keep it exact
		o.Seed = uint64(time.Now().UnixNano()) & (1<<53 - 1)
	}
	if o.BehaviourTimeout <= 0 {
		o.BehaviourTimeout = 5 * time.Minute
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	r := &run{s: s, opts: o, prefix: s.Prefix, remote: provider.Remote{NC: s.NC, ID: s.ProviderID},
		rng:     mrand.New(mrand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)),
		cleaned: map[string]bool{}, gone: map[string]bool{}}
	if r.prefix == "" {
		r.prefix = "cf" + strings.ToLower(rand.Text()[:8])
	}
	var err error
	if r.tap, err = startTap(s.NC, s.SecretValues); err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
	r.desc, r.descErr = r.remote.Describe(dctx)
	cancel()
	r.report = Report{
		Provider: ProviderInfo{ID: s.ProviderID}, Profiles: slices.Clone(s.Profiles),
		SuiteVersion: SuiteVersion, RegistryHash: RegistryHash(), GitCommit: gitCommit(),
		Seed: o.Seed, Prefix: r.prefix, Host: currentHost(), Start: time.Now().UTC(),
	}
	if r.desc != nil {
		r.report.Provider = ProviderInfo{ID: r.desc.ID, Version: r.desc.Version, Capabilities: r.desc.Capabilities}
	}
	return r, nil
}

// Certify runs every behaviour against the subject and returns the report
// (verdict, per-behaviour results and figures). Errors: only a subject the
// program cannot use (no connection, provider id, offer or image; an
// unknown profile; a malformed prefix); a provider failing is a report
// with verdict FAILED, not an error.
func Certify(ctx context.Context, s Subject, o Options) (*Report, error) {
	r, err := newRun(ctx, s, o)
	if err != nil {
		return nil, err
	}
	for _, b := range r.order() {
		_ = r.record(r.exec(ctx, b))
	}
	return r.finish(context.WithoutCancel(ctx)), nil
}

// order is the registry in execution order: the secrets lane last, so it
// sees every reply, log line and report of the run.
func (r *run) order() []*Behaviour {
	var first, last []*Behaviour
	for i := range registry {
		b := &registry[i]
		if b.Area == AreaSecrets {
			last = append(last, b)
		} else {
			first = append(first, b)
		}
	}
	return append(first, last...)
}

// claims reports whether describe claimed capability.
func (r *run) claims(capability string) bool {
	return r.desc != nil && slices.Contains(r.desc.Capabilities, capability)
}

// skipOrIncomplete is the status of a behaviour that must not run, with
// its reason; "" when it runs.
func (r *run) skipOrIncomplete(b *Behaviour) (Status, string) {
	if !slices.ContainsFunc(b.Profiles, func(p string) bool { return slices.Contains(r.s.Profiles, p) }) {
		return Skipped, fmt.Sprintf("profile %s not claimed", strings.Join(b.Profiles, ","))
	}
	if b.Capability != "" && !r.claims(b.Capability) {
		return Skipped, fmt.Sprintf("capability %s not claimed", b.Capability)
	}
	if len(r.opts.Only) > 0 && !slices.Contains(r.opts.Only, b.ID) {
		return Incomplete, "not selected in this run"
	}
	var missing []string
	for _, h := range hooks {
		if b.needs&h.bit != 0 && !r.has(h.bit) {
			missing = append(missing, h.name)
		}
	}
	if len(missing) > 0 {
		return Incomplete, fmt.Sprintf("needs the subject's %s hook (profile %s claimed)",
			strings.Join(missing, " and "), strings.Join(b.Profiles, ","))
	}
	return "", ""
}

// has reports whether the subject provides hook h.
func (r *run) has(h hook) bool {
	switch h {
	case needFaults:
		return r.s.Faults != nil
	case needInventory:
		return r.s.Inventory != nil
	case needService:
		return r.s.Service != nil
	case needSecretValues:
		return len(r.s.SecretValues) > 0
	case needLogs:
		return r.s.Logs != nil
	case needSSH:
		return r.s.SSH != nil
	case needNetwork:
		return r.s.Network != nil
	case needNodeNetwork:
		return r.s.NodeNetwork != nil
	}
	return false
}

// exec runs one behaviour and returns its result.
func (r *run) exec(ctx context.Context, b *Behaviour) Result {
	res := Result{ID: b.ID, Area: b.Area, Title: b.Title, Profiles: b.Profiles, Capability: b.Capability}
	if status, reason := r.skipOrIncomplete(b); status != "" {
		res.Status, res.Reason = status, reason
		return res
	}
	if ctx.Err() != nil {
		res.Status, res.Reason = Incomplete, "the run was cancelled"
		return res
	}
	timeout := r.opts.BehaviourTimeout
	if b.Area == AreaScale {
		timeout *= 4
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &check{ctx: cctx, cancel: cancel, r: r, b: b}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.runCleanups()
		defer func() {
			if p := recover(); p != nil {
				c.Errorf("panicked: %v", p)
			}
		}()
		if r.descErr != nil && b.ID != "def.describe" && b.Area != AreaSecrets {
			c.Fatalf("describe failed, so nothing else can be checked: %v", r.descErr)
		}
		b.run(c)
	}()
	select {
	case <-done:
	case <-cctx.Done():
		c.Errorf("did not finish within %s", timeout)
		select { // give cleanups a moment once the context is cancelled
		case <-done:
		case <-time.After(time.Minute):
			c.Logf("its cleanups did not finish either")
		}
	}
	res.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	res.Status, res.Reason, res.Log, res.Metrics = c.outcome()
	return res
}

// record redacts secret values from a result, adds it to the report,
// prints a progress line and returns it as recorded.
func (r *run) record(res Result) Result {
	res = r.redact(res)
	r.mu.Lock()
	r.report.Behaviours = append(r.report.Behaviours, res)
	r.mu.Unlock()
	if r.opts.Progress == nil {
		return res
	}
	line := fmt.Sprintf("%-10s %-36s %8.0fms", res.Status, res.ID, res.DurationMs)
	if res.Reason != "" {
		line += "  " + res.Reason
	}
	fmt.Fprintln(r.opts.Progress, line)
	for _, l := range res.Log {
		fmt.Fprintf(r.opts.Progress, "           %s\n", l)
	}
	if len(res.Metrics) > 0 {
		fmt.Fprintf(r.opts.Progress, "           metrics: %s\n", strings.Join(metricLines(res.Metrics), " "))
	}
	return res
}

// redactedText replaces secret values in the text of results.
const redactedText = "[REDACTED]"

// redact cuts the subject's secret values out of a result's reason and
// log, noting the behaviour when it had to.
func (r *run) redact(res Result) Result {
	hit := false
	clean := func(s string) string {
		for _, v := range r.s.SecretValues {
			if v != "" && strings.Contains(s, v) {
				s, hit = strings.ReplaceAll(s, v, redactedText), true
			}
		}
		return s
	}
	res.Reason = clean(res.Reason)
	log := make([]string, len(res.Log))
	for i, line := range res.Log {
		log[i] = clean(line)
	}
	res.Log = log
	if hit {
		r.mu.Lock()
		r.redacted = append(r.redacted, res.ID)
		r.mu.Unlock()
	}
	return res
}

// finish removes the shared inventory and any machine of the run still
// present, stops the tap and completes the report. ctx should outlive a
// cancelled run, so the cleanup still happens.
func (r *run) finish(ctx context.Context) *Report {
	r.sweep(ctx)
	r.tap.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report.End = time.Now().UTC()
	r.report.finish()
	if r.opts.Progress != nil {
		s := r.report.Summary
		fmt.Fprintf(r.opts.Progress, "verdict %s: %d passed, %d failed, %d incomplete, %d skipped (provider %s %s, registry %s)\n",
			r.report.Verdict, s.Passed, s.Failed, s.Incomplete, s.Skipped, r.report.Provider.ID,
			r.report.Provider.Version, r.report.RegistryHash[:12])
	}
	out := r.report
	return &out
}

// snapshot is the report as it stands, and the behaviours whose results
// had secret values redacted (secrets.reports checks both).
func (r *run) snapshot() (Report, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.report
	out.Behaviours = slices.Clone(r.report.Behaviours)
	out.End = time.Now().UTC()
	out.finish()
	return out, slices.Clone(r.redacted)
}

// cleanupOnce registers f as c's cleanup unless machine id has one; f
// does not run if the machine is gone by then (markGone).
func (r *run) cleanupOnce(c *check, id string, f func()) {
	r.mu.Lock()
	seen := r.cleaned[id]
	r.cleaned[id] = true
	r.mu.Unlock()
	if seen {
		return
	}
	c.Cleanup(func() {
		r.mu.Lock()
		gone := r.gone[id]
		delete(r.cleaned, id)
		delete(r.gone, id)
		r.mu.Unlock()
		if !gone {
			f()
		}
	})
}

// markGone notes that machine id was deleted or removed, so its cleanup
// does not delete it again.
func (r *run) markGone(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone[id] = true
}

// intn is a random int in [0, n) from the run's seeded source.
func (r *run) intn(n int) int {
	r.rngMu.Lock()
	defer r.rngMu.Unlock()
	return r.rng.IntN(n)
}
