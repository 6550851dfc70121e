package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
)

var update = flag.Bool("update", false, "rewrite cmd/compute/testdata/*.golden with the output of this build")

// golden compares got with testdata/name.golden (rewriting it with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to write it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got ---\n%s--- want ---\n%s", name, path, got, want)
	}
}

// render runs fn with globals printing format into a buffer.
func render(t *testing.T, format string, fn func(g *globals) error) string {
	t.Helper()
	var out bytes.Buffer
	g := &globals{out: &out, output: format}
	if err := fn(g); err != nil {
		t.Fatalf("-o %s: %v", format, err)
	}
	return out.String()
}

var (
	created = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	perHour = func(p float64) *float64 { return &p }
)

// fixtures are records of every kind with their cells filled in, ids fixed.
func fixtures() (api.List[api.Secret], api.List[api.Account], api.List[api.Pool], api.List[api.Instance], []api.Offer, api.ProviderInfo) {
	secrets := api.List[api.Secret]{Items: []api.Secret{
		{ID: "sec_01jf0000000000000000000001", TenantID: "demo", Name: "hcloud", Ref: "secret://demo/sec_01jf0000000000000000000001", CreatedAt: created},
	}}
	accounts := api.List[api.Account]{Items: []api.Account{
		{ID: "pacct_01jf0000000000000000000001", TenantID: "demo", Provider: "hetzner-cloud", Name: "prod", Version: 2,
			Config: map[string]any{"token": "secret://demo/sec_01jf0000000000000000000001", "location": "fsn1"}, CreatedAt: created},
	}, NextCursor: "pacct_01jf0000000000000000000001"}
	pools := api.List[api.Pool]{Items: []api.Pool{
		{ID: "pool_01jf0000000000000000000001", TenantID: "demo", Name: "web", Class: api.PoolClassProvider, Agent: api.PoolAgentNone,
			ProviderAccountID: "pacct_01jf0000000000000000000001", CreatedAt: created,
			Flavors: []api.Flavor{{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"}, {Name: "arm", OfferID: "cax11"}}},
	}}
	retry := created.Add(time.Minute)
	instances := api.List[api.Instance]{Items: []api.Instance{
		{ID: "inst_01jf0000000000000000000001", TenantID: "demo", PoolID: "pool_01jf0000000000000000000001", Flavor: "small",
			Image: "ubuntu-24.04", Name: "web-1", Desired: api.DesiredState{Power: api.PowerOn}, Generation: 1, CreatedAt: created,
			Labels: map[string]string{"tier": "web", "env": "prod"},
			Status: api.InstanceStatus{Phase: api.PhaseRunning, ObservedGeneration: 1,
				Machine: &api.ExternalMachine{ID: "4711", State: api.StateRunning, Addresses: []string{"203.0.113.1", "2001:db8::1"}}}},
		{ID: "inst_01jf0000000000000000000002", TenantID: "demo", PoolID: "pool_01jf0000000000000000000001", Flavor: "small",
			Image: "ubuntu-24.04", Name: "web-2", Desired: api.DesiredState{Power: api.PowerOn}, Generation: 1, CreatedAt: created,
			Status: api.InstanceStatus{Phase: api.PhaseProvisioning, Conditions: []api.Condition{{Type: api.ConditionProviderError,
				Status: api.ConditionTrue, Reason: api.ReasonOf(api.CodeRateLimited), Message: "rate limit spent", RetryAt: &retry,
				LastTransitionTime: created}},
				LastOperation: &api.OperationStatus{ID: "op_01jf0000000000000000000001", Action: api.ActionReset,
					State: api.OperationSucceeded, StartedAt: created, Message: "done"}}},
	}}
	offers := []api.Offer{
		{ID: "cx33", Kind: api.KindVPS, Region: "fsn1", Vcpu: 4, MemoryGiB: 8, DiskGiB: 80, PricePerHour: perHour(0.0104),
			Architecture: api.ArchAMD64, Currency: "EUR", Available: true, CapacityType: api.CapacityOnDemand},
		{ID: "local", Kind: api.KindVPS, Region: "pve", Vcpu: 2, MemoryGiB: 2, CapacityType: api.CapacityOnDemand},
		{ID: "cax21", Kind: api.KindVPS, Region: "fsn1", Vcpu: 4, MemoryGiB: 8, DiskGiB: 80, PricePerHour: perHour(0.0088),
			Architecture: api.ArchARM64, Currency: "EUR", Available: false, CapacityType: api.CapacityOnDemand},
		{ID: "cx23", Kind: api.KindVPS, Region: "fsn1", Vcpu: 2, MemoryGiB: 4, DiskGiB: 40, PricePerHour: perHour(0.0067),
			Architecture: api.ArchAMD64, Currency: "EUR", Available: true, CapacityType: api.CapacityOnDemand},
	}
	prov := api.ProviderInfo{ID: "hetzner-cloud", Version: "1.2.0", Capabilities: []string{"power", "reinstall", "list"},
		Fields: []api.ManifestField{
			{Name: "token", Type: "secret", Required: true, Description: "API token (a secret reference)"},
			{Name: "location", Type: "option", Options: []string{"fsn1", "nbg1"}, Default: "fsn1"},
			{Name: "network", Type: "object", Fields: []api.ManifestField{{Name: "id", Type: "int"}}},
		}}
	return secrets, accounts, pools, instances, offers, prov
}

// The tables of every record kind, as -o table, wide, yaml and id print
// them (offers sorted cheapest first, unpriced last).
func TestOutputGolden(t *testing.T) {
	secrets, accounts, pools, instances, offers, prov := fixtures()
	sorted := append([]api.Offer(nil), offers...)
	api.SortOffersByPrice(sorted)
	for _, format := range []string{formatTable, formatWide, formatYAML, formatID} {
		out := render(t, format, func(g *globals) error {
			steps := []func() error{
				func() error { return show(g, secretView, secrets, secrets.Items, "") },
				func() error { return show(g, accountView, accounts, accounts.Items, "") },
				func() error { return show(g, poolView, pools, pools.Items, "") },
				func() error { return show(g, instanceView, instances, instances.Items, "") },
				func() error { return show(g, offerView, api.List[api.Offer]{Items: offers}, sorted, "") },
				func() error {
					return show(g, providerView, api.List[api.ProviderInfo]{Items: []api.ProviderInfo{prov}}, []api.ProviderInfo{prov}, "")
				},
				func() error { return showProvider(g, prov) },
				func() error {
					return showOne(g, deletedView, api.Deleted{ID: "pool_01jf0000000000000000000001", Deleted: true})
				},
				func() error { return showInstance(g, instances.Items[1]) },
				func() error {
					revoked := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
					ten := api.Tenant{ID: "acme", Account: "ACCOUNTPUBLICKEYOFACME", State: api.TenantActive,
						Limits: api.DefaultTenantLimits, CreatedAt: time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC), Version: 3,
						Credentials: []api.TenantCredential{{ID: "UONE", Name: "cli"}, {ID: "UTWO", Name: "ci", RevokedAt: &revoked}}}
					return show(g, tenantView, api.List[api.Tenant]{Items: []api.Tenant{ten}}, []api.Tenant{ten}, "")
				},
			}
			for _, step := range steps {
				if err := step(); err != nil {
					return err
				}
				g.out.(*bytes.Buffer).WriteString("\n")
			}
			return nil
		})
		golden(t, "output-"+format, out)
	}
}

// -o json prints the reply as the services send it: the offers in the
// provider's order, a page with its nextCursor.
func TestOutputJSONIsTheReply(t *testing.T) {
	_, accounts, _, _, offers, _ := fixtures()
	out := render(t, formatJSON, func(g *globals) error {
		sorted := append([]api.Offer(nil), offers...)
		api.SortOffersByPrice(sorted)
		return show(g, offerView, api.List[api.Offer]{Items: offers}, sorted, "")
	})
	golden(t, "offers-json", out)
	out = render(t, formatJSON, func(g *globals) error { return show(g, accountView, accounts, accounts.Items, accounts.NextCursor) })
	if want := render(t, formatJSON, func(g *globals) error { return g.print(accounts) }); out != want {
		t.Fatalf("-o json of a page:\n%s\nwant the reply:\n%s", out, want)
	}
}

// Without -o, a buffer (not a terminal) gets JSON; an unknown -o is refused.
func TestOutputDefaultAndUnknown(t *testing.T) {
	g := &globals{out: &bytes.Buffer{}}
	if f, err := g.format(); f != formatJSON || err != nil {
		t.Fatalf("default format off a terminal: %q %v, want json", f, err)
	}
	g.output = "xml"
	if _, err := g.format(); err == nil {
		t.Fatal("-o xml accepted")
	}
}

// exec and logs replies honour -o: text for a person on table and wide,
// the reply on json and yaml, -o id refused.
func TestOutputOfExecAndLogs(t *testing.T) {
	exec := api.InstanceExecReply{ExitCode: 3, Stdout: "active\n", Stderr: "warning: slow", Truncated: true}
	logs := api.InstanceLogsReply{Source: api.LogSourceCloudInit, Lines: []string{"Cloud-init v. 24.1 running", "done"}, Truncated: true}
	showExec := func(g *globals) error {
		return showText(g, exec, func(w io.Writer) error { return writeExec(w, exec) })
	}
	showLogs := func(g *globals) error {
		return showText(g, logs, func(w io.Writer) error { return writeLogs(w, logs) })
	}
	cases := []struct {
		format string
		show   func(*globals) error
		want   string
	}{
		{formatTable, showExec, "exit code 3 (output cut to its last 64 KiB)\n--- stdout\nactive\n--- stderr\nwarning: slow\n"},
		{formatWide, showLogs, "Cloud-init v. 24.1 running\ndone\n(cloud-init cut to its last 64 KiB: older lines left out)\n"},
		{formatJSON, showExec, "{\n  \"exitCode\": 3,\n  \"stdout\": \"active\\n\",\n  \"stderr\": \"warning: slow\",\n  \"truncated\": true,\n  \"timedOut\": false\n}\n"},
		{formatYAML, showLogs, "source: \"cloud-init\"\nlines:\n  - \"Cloud-init v. 24.1 running\"\n  - \"done\"\ntruncated: true\n"},
	}
	for _, c := range cases {
		if got := render(t, c.format, c.show); got != c.want {
			t.Errorf("-o %s:\n%q\nwant\n%q", c.format, got, c.want)
		}
	}
	if err := showExec(&globals{out: &bytes.Buffer{}, output: formatID}); err == nil {
		t.Error("-o id of an exec reply accepted")
	}
}
