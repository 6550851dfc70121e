package console_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/reconciler"
)

// update rewrites the screenshots in docs/console (go test -run
// TestBrowser ./services/console -update, or make console-screenshots).
var update = flag.Bool("update", false, "rewrite the screenshots in docs/console/*.png")

// screenshotDir is where -update writes the screenshots.
const screenshotDir = "../../docs/console"

// browserNames are the executables tried for headless Chromium.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// browser starts headless Chromium for t (skipped when none is installed,
// failed instead when CI=true) and returns the first tab's context and a
// function opening a tab in a browser context of its own (own cookies:
// another user).
func browser(t *testing.T) (tab context.Context, newUser func() context.Context) {
	t.Helper()
	path := ""
	for _, n := range browserNames {
		if p, err := exec.LookPath(n); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		msg := "no Chromium found (tried " + strings.Join(browserNames, ", ") + "): apt-get install chromium to run the browser tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("disable-gpu", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", path, err)
	}
	return ctx, func() context.Context {
		c, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		return c
	}
}

// do runs browser steps, failing t with the page's text on error.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, body)
	}
}

// text is the visible text of the first node matching sel, once there is
// one. It reads by selector in one evaluation, so a live refresh that
// replaces the page's main section cannot leave it reading a stale node.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	q := fmt.Sprintf("document.querySelector(%q)", sel)
	waitFor(t, ctx, "a node "+sel, q+" !== null")
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("(%s || {innerText: ''}).innerText", q)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// waitFor polls a JavaScript predicate (30 s at most).
func waitFor(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(25*time.Millisecond))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, body)
	}
}

// signIn signs in as tenant, pasting the text of its credential (its
// .creds file) into the form, and waits for the overview.
func (f *fleet) signIn(t *testing.T, ctx context.Context, tenant string) {
	t.Helper()
	f.signInWith(t, ctx, tenant, chromedp.SetValue(chromedp.CSS(`textarea[name=creds]`), f.CredsText(t, tenant)))
}

// signInUploading signs in as tenant, loading its .creds file with the
// form's file picker, and waits for the overview.
func (f *fleet) signInUploading(t *testing.T, ctx context.Context, tenant string) {
	t.Helper()
	f.signInWith(t, ctx, tenant, chromedp.SetUploadFiles(chromedp.CSS(`#creds-file`), []string{f.Creds[tenant]}))
}

// signInWith signs in as tenant, giving its credential with fill, and
// waits for the overview.
func (f *fleet) signInWith(t *testing.T, ctx context.Context, tenant string, fill chromedp.Action[chromedp.Void]) {
	t.Helper()
	do(t, ctx, "sign-in form of "+tenant,
		chromedp.Navigate(f.console.URL()+"/signin"),
		chromedp.SetValue(chromedp.CSS(`input[name=tenant]`), tenant),
		fill,
	)
	waitFor(t, ctx, "the form holds "+tenant+"'s credential",
		`document.querySelector("textarea[name=creds]").value.includes("-----BEGIN NATS USER JWT-----")`)
	do(t, ctx, "sign in as "+tenant,
		chromedp.Click(chromedp.CSS(`#signin`)),
		chromedp.WaitVisible(chromedp.CSS(`#overview`)),
	)
	if got := text(t, ctx, "#tenant"); got != tenant {
		t.Fatalf("signed in as %q, the header says %q", tenant, got)
	}
	waitFor(t, ctx, "the event stream connects", `document.getElementById("live").dataset.state === "live"`)
}

// screenshot checks that the page shows no secret value (secretValues)
// and writes it as docs/console/name.png under -update.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range secretValues {
		if strings.Contains(html, v) {
			t.Errorf("page %s shows the secret value %q", name, v)
		}
	}
	if !*update {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG (less is JPEG)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The overview counts each pool's instances per phase, live; the
// instance list, an instance's page, the offers and the cost show what
// runs, priced.
func TestBrowserOverview(t *testing.T) {
	f := startFleet(t, reconciler.Hooks{})
	acme := f.tenant(t, "acme")
	web, batch := acme.hetznerPool("web"), acme.hetznerPool("batch")
	ctx, _ := browser(t)
	do(t, ctx, "sign-in form", chromedp.Navigate(f.console.URL()+"/signin"), chromedp.WaitVisible(chromedp.CSS(`#signin`)))
	screenshot(t, ctx, "signin")
	f.signIn(t, ctx, "acme")
	var running []api.Instance
	for _, name := range []string{"web-1", "web-2"} {
		running = append(running, acme.instance(web, name))
	}
	running = append(running, acme.instance(batch, "batch-1"))
	for _, inst := range running {
		acme.waitPhase(inst.ID, api.PhaseRunning)
	}
	waitFor(t, ctx, "the overview counts 3 running instances, live",
		`document.querySelector('#totals td[data-phase=Running]').textContent === "3"`)
	for _, c := range []struct {
		sel, want string
	}{
		{fmt.Sprintf(`tr[data-pool=%q] td[data-phase=Running]`, web.ID), "2"},
		{fmt.Sprintf(`tr[data-pool=%q] td[data-phase=Pending]`, web.ID), "0"},
		{fmt.Sprintf(`tr[data-pool=%q] td[data-phase=Running]`, batch.ID), "1"},
		{`#totals td[data-phase=Running]`, "3"},
	} {
		if got := text(t, ctx, c.sel); got != c.want {
			t.Errorf("overview %s = %q, want %q", c.sel, got, c.want)
		}
	}
	screenshot(t, ctx, "overview")

	do(t, ctx, "instances", chromedp.Navigate(f.console.URL()+"/instances"), chromedp.WaitVisible(chromedp.CSS(`#instances`)))
	for _, inst := range running {
		if got := text(t, ctx, fmt.Sprintf(`tr[data-instance=%q] [data-phase]`, inst.ID)); got != "Running" {
			t.Errorf("instance %s (%s) shows phase %q, want Running", inst.Name, inst.ID, got)
		}
	}
	screenshot(t, ctx, "instances")

	do(t, ctx, "instance page", chromedp.Navigate(f.console.URL()+"/instances/"+running[0].ID), chromedp.WaitVisible(chromedp.CSS(`#conditions`)))
	if got := text(t, ctx, "#phase"); got != "Running" {
		t.Errorf("instance page phase = %q, want Running", got)
	}
	if got := text(t, ctx, "#conditions"); !strings.Contains(got, "Ready") || !strings.Contains(got, "Converged") {
		t.Errorf("instance page conditions = %q, want Ready True Converged", got)
	}
	// The machine's cpu of the last hour (instances.metrics), drawn as a line.
	points, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`(document.querySelector('#metrics figure[data-series=cpu] polyline')?.getAttribute('points') ?? '').split(' ').filter(Boolean).length`))
	if err != nil || points < 2 {
		t.Errorf("instance page cpu chart has %d points (%v), want a line: %q", points, err, text(t, ctx, "#metrics"))
	}
	if got := text(t, ctx, "#metrics figcaption"); !strings.HasPrefix(got, "cpu: last ") || !strings.HasSuffix(got, " percent") {
		t.Errorf("instance page cpu caption = %q, want the last and largest value in percent", got)
	}
	screenshot(t, ctx, "instance")

	do(t, ctx, "offers", chromedp.Navigate(f.console.URL()+"/offers"), chromedp.WaitVisible(chromedp.CSS(`tr[data-offer=cx23]`)))
	price := acme.price(web.ProviderAccountID, "cx23")
	if got, want := text(t, ctx, `tr[data-offer=cx23]`), fmt.Sprintf("%.4f EUR\t%.2f EUR", price, price*730); !strings.Contains(got, want) {
		t.Errorf("offers row of cx23 = %q, want the prices %q", got, want)
	}
	screenshot(t, ctx, "offers")

	do(t, ctx, "cost", chromedp.Navigate(f.console.URL()+"/cost"), chromedp.WaitVisible(chromedp.CSS(`#cost-total`)))
	for _, c := range []struct {
		sel       string
		n         int
		perHourOf float64
	}{
		{`tr[data-pool="web"]`, 2, price},
		{`tr[data-pool="batch"]`, 1, price},
		{`#cost-total`, 3, price},
	} {
		want := fmt.Sprintf("%d\t%.4f EUR\t%.2f EUR\t0\t0", c.n, float64(c.n)*c.perHourOf, float64(c.n)*c.perHourOf*730)
		if got := text(t, ctx, c.sel); !strings.HasSuffix(got, want) {
			t.Errorf("cost %s = %q, want it to end with %q", c.sel, got, want)
		}
	}
	screenshot(t, ctx, "cost")
}

// An instance created while its page is open shows up Pending and turns
// Running on the page, without a reload: the events stream (SSE) drives
// the page.
func TestBrowserInstanceGoesRunningLive(t *testing.T) {
	gate := make(chan struct{})
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	f := startFleet(t, reconciler.Hooks{BeforePass: func(string) { <-gate }})
	// Registered after the fleet's, so it runs first: the reconciler's
	// Stop waits for the passes held at the gate.
	t.Cleanup(open)
	acme := f.tenant(t, "acme")
	pool := acme.hetznerPool("web")
	ctx, _ := browser(t)
	f.signIn(t, ctx, "acme")
	do(t, ctx, "instances", chromedp.Navigate(f.console.URL()+"/instances"), chromedp.WaitVisible(chromedp.CSS(`#instances`)))
	// A reload would drop this mark.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	inst := acme.instance(pool, "web-1")
	row := fmt.Sprintf(`document.querySelector('tr[data-instance=%q] [data-phase]')`, inst.ID)
	waitFor(t, ctx, "the new instance shows Pending", row+` !== null && `+row+`.dataset.phase === "Pending"`)
	screenshot(t, ctx, "instance-pending")
	open()
	waitFor(t, ctx, "the instance turns Running on the page", row+` !== null && `+row+`.dataset.phase === "Running"`)
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`)); err != nil || !got {
		t.Fatalf("the page was reloaded (mark = %v, %v): the update must come from the event stream", got, err)
	}
	refreshes, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main").dataset.refreshes`))
	if err != nil || refreshes == "" {
		t.Fatalf("the page's main section was never refreshed from the event stream (%q, %v)", refreshes, err)
	}
	do(t, ctx, "instance page", chromedp.Navigate(f.console.URL()+"/instances/"+inst.ID), chromedp.WaitVisible(chromedp.CSS(`#events`)))
	timeline := text(t, ctx, "#events")
	for _, typ := range []string{"created", "provisioning", "running"} {
		if !strings.Contains(timeline, typ) {
			t.Errorf("the events timeline lacks %q:\n%s", typ, timeline)
		}
	}
}

// Signed in as globex (its .creds file uploaded with the form's file
// picker), the console shows nothing of acme: no pool, no
// instance, no event, and acme's instance page is NOT_FOUND; globex's
// NATS account could not read acme's subjects even if the console tried.
func TestBrowserTenantSeesNothingOfAnother(t *testing.T) {
	f := startFleet(t, reconciler.Hooks{})
	acme := f.tenant(t, "acme")
	pool := acme.hetznerPool("web")
	first := acme.instance(pool, "web-1")
	acme.waitPhase(first.ID, api.PhaseRunning)

	acmeTab, newUser := browser(t)
	f.signIn(t, acmeTab, "acme")
	globexTab := newUser()
	f.signInUploading(t, globexTab, "globex")
	if got := text(t, globexTab, "#overview tbody"); got != "No pools yet." {
		t.Errorf("globex's overview shows %q, want no pools", got)
	}
	if got := text(t, globexTab, "#totals"); got != "all pools\t0\t0\t0\t0\t0\t0\t0\t0" {
		t.Errorf("globex's totals = %q, want all zero", got)
	}
	// An acme event reaches acme's open overview, never globex's.
	second := acme.instance(pool, "web-2")
	waitFor(t, acmeTab, "acme's overview shows its new instance's event",
		fmt.Sprintf(`document.querySelector('#events a[href="/instances/%s"]') !== null`, second.ID))
	if got := text(t, globexTab, "#events"); got != "No events since you signed in." {
		t.Errorf("globex's overview shows events %q, want none", got)
	}
	do(t, globexTab, "globex's instances", chromedp.Navigate(f.console.URL()+"/instances"), chromedp.WaitVisible(chromedp.CSS(`#instances`)))
	if got := text(t, globexTab, "#instances tbody"); got != "No instances." {
		t.Errorf("globex's instance list shows %q, want none", got)
	}
	do(t, globexTab, "acme's instance as globex", chromedp.Navigate(f.console.URL()+"/instances/"+first.ID), chromedp.WaitVisible(chromedp.CSS(`#error`)))
	if got := text(t, globexTab, "#error .code"); got != string(api.CodeNotFound) {
		t.Errorf("acme's instance page as globex: %q, want NOT_FOUND", text(t, globexTab, "#error"))
	}
	do(t, globexTab, "globex's offers", chromedp.Navigate(f.console.URL()+"/offers"), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	if got := text(t, globexTab, "main"); strings.Contains(got, "web") || strings.Contains(got, "cx23") {
		t.Errorf("globex's offers page shows acme's account:\n%s", got)
	}
}
