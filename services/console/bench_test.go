package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/services/console"
	"better-compute.io/compute/services/reconciler"
)

// benchInstances is the fleet size of BenchmarkOverview.
const benchInstances = 200

// BenchmarkOverview prices the overview page of a 200-instance tenant
// against its baseline, the two reads it makes (every pool, every
// instance) through the client on the same kind of connection: the ratio
// of the two is what the console adds (rendering, HTTP, session). Passes
// are held at a gate, so the fleet stays still while it is measured.
//
//	go test -run '^$' -bench Overview ./services/console/
func BenchmarkOverview(b *testing.B) {
	gate := make(chan struct{})
	var release sync.Once
	f := startFleet(b, reconciler.Hooks{BeforePass: func(string) { <-gate }})
	b.Cleanup(func() { release.Do(func() { close(gate) }) })
	acme := f.tenant(b, "acme")
	pool := acme.hetznerPool("web")
	for i := range benchInstances {
		acme.instance(pool, fmt.Sprintf("web-%d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tenant, err := console.DialNATS(f.URL)(ctx, console.Credentials{Tenant: "acme", Creds: f.CredsText(b, "acme")})
	if err != nil {
		b.Fatal(err)
	}
	defer tenant.Close()
	b.Run("baseline-client-reads", func(b *testing.B) {
		for b.Loop() {
			if _, err := tenant.Pools(ctx); err != nil {
				b.Fatal(err)
			}
			instances, err := tenant.Instances(ctx)
			if err != nil || len(instances) != benchInstances {
				b.Fatalf("%d instances, %v", len(instances), err)
			}
		}
	})
	web := signedInClient(b, f, "acme")
	b.Run("overview-page", func(b *testing.B) {
		for b.Loop() {
			resp, err := web.Get(f.console.URL() + "/")
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`<td class="count">%d</td>`, benchInstances)) {
				b.Fatalf("GET /: %s\n%s", resp.Status, body)
			}
		}
	})
}

// signedInClient is an HTTP client signed in to f's console as tenant
// with the text of its credential.
func signedInClient(tb testing.TB, f *fleet, tenant string) *http.Client {
	tb.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(f.console.URL() + "/signin")
	if err != nil {
		tb.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	m := csrfField.FindStringSubmatch(string(body))
	if m == nil {
		tb.Fatalf("no csrf field:\n%s", body)
	}
	resp, err = c.PostForm(f.console.URL()+"/signin", url.Values{"csrf": {m[1]}, "tenant": {tenant},
		"creds": {f.CredsText(tb, tenant)}})
	if err != nil {
		tb.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" {
		tb.Fatalf("sign in as %s: %s at %s", tenant, resp.Status, resp.Request.URL)
	}
	return c
}
