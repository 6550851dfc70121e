package authtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/secrets"
)

// deniedTimeout bounds a request the server refuses to forward: it can only
// time out (the permission violation, asserted separately, is the proof).
const deniedTimeout = time.Second

// Tenant acme runs its walkthrough; then, with globex's resources live,
// every way acme could reach globex, the internal subjects or the event
// stream is tried and each is asserted denied.
func TestTenantIsolation(t *testing.T) {
	s := startStack(t)
	acme, globex := s.tenantClient(t, "acme"), s.tenantClient(t, "globex")
	a := walkthrough(t, acme, acmeToken)
	g := walkthrough(t, globex, globexToken)
	acct := api.ProviderAccount{ID: g.account.ID, TenantID: "globex", Config: g.account.Config, Version: g.account.Version}

	t.Run("requests nats-server refuses to forward", func(t *testing.T) {
		assertRefused(t, acme, []refusal{
			{"globex's instance", bus.Command("globex", bus.ResourceInstances, "get"), api.IDRequest{ID: g.instance.ID}},
			{"globex's instances", bus.Command("globex", bus.ResourceInstances, "delete"), api.IDRequest{ID: g.instance.ID}},
			{"an exec on globex's instance", bus.Command("globex", bus.ResourceInstances, "exec"),
				api.InstanceExecRequest{ID: g.instance.ID, Command: "cat /etc/shadow"}},
			{"globex's instance's logs", bus.Command("globex", bus.ResourceInstances, "logs"),
				api.InstanceLogsRequest{ID: g.instance.ID, Source: api.LogSourceJournal}},
			{"globex's secrets", bus.Command("globex", bus.ResourceSecrets, "list"), api.ListRequest{}},
			{"a put as globex", bus.Command("globex", bus.ResourceSecrets, "put"), api.SecretPutRequest{Name: "x", Value: "acme-as-globex"}},
			{"globex's accounts", bus.Command("globex", bus.ResourceAccounts, "get"), api.IDRequest{ID: g.account.ID}},
			{"globex's pools", bus.Command("globex", bus.ResourcePools, "list"), api.ListRequest{}},
			{"a command of six tokens", bus.Command("acme", bus.ResourceInstances, "get") + ".x", api.IDRequest{ID: a.instance.ID}},
			{"resolve globex's secret", bus.SecretsResolve, api.SecretResolveRequest{TenantID: "globex", Ref: g.secret.Ref}},
			{"resolve its own secret", bus.SecretsResolve, api.SecretResolveRequest{TenantID: "acme", Ref: a.secret.Ref}},
			{"check a reference", bus.SecretsCheck, api.SecretResolveRequest{TenantID: "globex", Ref: g.secret.Ref}},
			{"rekey", secrets.RekeySubject, secrets.RekeyRequest{}},
			{"provider offers with globex's account", bus.ProviderCall(hetzner.ProviderID, "offers"), api.ProviderOffersRequest{Account: acct}},
			{"provider delete of globex's machine", bus.ProviderCall(hetzner.ProviderID, "delete"), api.ProviderMachineRequest{Account: acct, ID: g.instance.Status.Machine.ID}},
			{"provider describe", bus.ProviderCall(hetzner.ProviderID, "describe"), api.Empty{}},
			{"JetStream API", "$JS.API.STREAM.MSG.GET.KV_" + bus.BucketSecrets, map[string]any{"last_by_subj": "$KV." + bus.BucketSecrets + ".globex." + g.secret.ID}},
			{"service discovery", "$SRV.INFO", api.Empty{}},
		})
	})

	t.Run("the tenant view of providers", func(t *testing.T) {
		var info api.ProviderInfo
		acme.must(bus.ResourceProviders, "describe", api.IDRequest{ID: hetzner.ProviderID}, &info)
		if info.ID != hetzner.ProviderID || len(info.Fields) == 0 {
			t.Fatalf("providers.describe as acme: %+v", info)
		}
		assertRefused(t, acme, []refusal{
			{"globex's providers", bus.Command("globex", bus.ResourceProviders, "list"), api.ListRequest{}},
		})
	})

	t.Run("publishes nats-server refuses", func(t *testing.T) {
		forged := api.Event{ID: api.NewID(api.PrefixEvent), TenantID: "acme", Resource: bus.ResourceInstances, ResourceID: a.instance.ID,
			Type: "deleted", Phase: api.PhaseFailed, Time: time.Now().UTC()}
		for _, tc := range []struct{ name, subject string }{
			{"a status change of its own instance", bus.Event("acme", bus.ResourceInstances, a.instance.ID, "deleted")},
			{"a status change of globex's instance", bus.Event("globex", bus.ResourceInstances, g.instance.ID, "deleted")},
			{"an event of five tokens", "compute.v1.acme.events.deleted"},
			{"work for the reconciler", bus.Work("acme", a.instance.ID)},
			{"a KV record", "$KV." + bus.BucketInstances + ".acme." + a.instance.ID},
		} {
			t.Run(tc.name, func(t *testing.T) {
				data, _ := json.Marshal(forged)
				if err := acme.nc.Publish(tc.subject, data); err != nil {
					t.Fatal(err)
				}
				acme.denied.wait(t, fmt.Sprintf("Publish to %q", tc.subject))
				if stored := s.lastStored(t, tc.subject); bytes.Equal(stored, data) {
					t.Fatalf("the forged message is stored on %s", tc.subject)
				}
			})
		}
		var inst api.Instance
		acme.must(bus.ResourceInstances, "get", api.IDRequest{ID: a.instance.ID}, &inst)
		if inst.Status.Phase != api.PhaseRunning {
			t.Fatalf("acme's instance after the forgeries: %s", inst.Status.Phase)
		}
	})

	t.Run("subscriptions nats-server refuses", func(t *testing.T) {
		for _, tc := range []struct{ name, subject, queue string }{
			{"globex's events", bus.EventsOf("globex"), ""},
			{"everybody's events", bus.EventsOf("*"), ""},
			{"globex's inbox", "_INBOX_globex.>", ""},
			{"the default inbox", "_INBOX.>", ""},
			{"the provider's inbox (resolved values)", "_INBOX_svc_provider-hetzner.>", ""},
			{"globex's commands", bus.Command("globex", "*", "*"), ""},
			{"puts of every tenant, as a queue member", bus.Command("*", bus.ResourceSecrets, "put"), "q"},
			{"its own commands", bus.Command("acme", bus.ResourceSecrets, "put"), ""},
			{"secret resolution", bus.SecretsResolve, ""},
			{"provider calls", bus.ProviderCall(hetzner.ProviderID, ">"), ""},
			{"work", bus.WorkRoot + ".>", ""},
			{"KV updates", "$KV.>", ""},
			{"everything", ">", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sub, err := acme.nc.QueueSubscribeSync(tc.subject, tc.queue)
				if err != nil {
					t.Fatal(err)
				}
				want := fmt.Sprintf("Subscription to %q", tc.subject)
				if tc.queue != "" {
					want += fmt.Sprintf(" using queue %q", tc.queue)
				}
				acme.denied.wait(t, want)
				if _, err := sub.NextMsg(time.Second); !errors.Is(err, nats.ErrPermissionViolation) {
					t.Fatalf("NextMsg on the refused subscription: %v; want a permission violation", err)
				}
			})
		}
	})

	t.Run("replies aimed at other subjects are not sent", func(t *testing.T) {
		// nats-server forwards a request whatever its reply subject, but
		// the request crosses from acme's account into SERVICES through
		// acme's import, which maps the reply back into acme's account: the
		// service's answer can land on globex's event or record subject
		// only inside acme's account, where no stream keeps it.
		targets := []string{
			bus.Event("globex", bus.ResourceInstances, g.instance.ID, "deleted"),
			"$KV." + bus.BucketInstances + ".globex." + g.instance.ID,
		}
		before := s.served(t, "reconciler", "instances-list")
		for _, reply := range targets {
			if err := acme.nc.PublishRequest(bus.Command("acme", bus.ResourceInstances, "list"), reply, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "the reconciler to answer both requests", func() bool {
			return s.served(t, "reconciler", "instances-list") >= before+len(targets)
		})
		if stored := s.lastStored(t, targets[0]); stored != nil {
			t.Fatalf("a message is stored on %s", targets[0])
		}
		if stored := s.lastStored(t, targets[1]); bytes.Contains(stored, []byte(`"items"`)) {
			t.Fatalf("acme's list reply is stored as globex's instance")
		}
		var inst api.Instance
		globex.must(bus.ResourceInstances, "get", api.IDRequest{ID: g.instance.ID}, &inst)
		if inst.TenantID != "globex" || inst.Status.Phase != api.PhaseRunning {
			t.Fatalf("globex's instance after the redirected replies: %+v", inst)
		}
	})

	t.Run("a reply aimed at another tenant's inbox reaches nobody", func(t *testing.T) {
		// Issue 20 item 1: acme's secrets.list with reply _INBOX_globex.x
		// used to land in globex's inbox. Now it stays in acme's account.
		inbox, err := globex.nc.SubscribeSync("_INBOX_globex.>")
		if err != nil {
			t.Fatal(err)
		}
		if err := globex.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		before := s.served(t, "secrets", "secrets-list")
		if err := acme.nc.PublishRequest(bus.Command("acme", bus.ResourceSecrets, "list"), "_INBOX_globex.x", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the secrets service to answer", func() bool { return s.served(t, "secrets", "secrets-list") > before })
		// The answer was published before the service counted it; a
		// round trip to the server after that puts anything routed to
		// globex's connection ahead of the PONG.
		if err := globex.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := inbox.Pending(); n != 0 {
			msg, _ := inbox.NextMsg(0)
			t.Fatalf("globex's inbox received %d messages: %s %q", n, msg.Subject, msg.Data)
		}
	})

	t.Run("the services refuse", func(t *testing.T) {
		create := func(ref string) error {
			return acme.call(bus.ResourceAccounts, "create", api.AccountCreateRequest{Provider: hetzner.ProviderID, Name: "steal",
				Config: map[string]any{"token": ref}}, nil)
		}
		wantCode(t, "account with globex's secret", create(g.secret.Ref), api.CodeAccessDenied, "config.token")
		wantCode(t, "account with the platform's environment", create("env://HOME"), api.CodeAccessDenied, "config.token")
		wantCode(t, "account with a vault reference (no vault store)", create("vault://kv/platform/hetzner#token"), api.CodeInvalidInput, "config.token")
		wantCode(t, "update to globex's secret", acme.call(bus.ResourceAccounts, "update", api.AccountUpdateRequest{ID: a.account.ID,
			Version: a.account.Version, Config: map[string]any{"token": g.secret.Ref}}, nil), api.CodeAccessDenied, "config.token")
		wantCode(t, "body naming globex", acme.call(bus.ResourceInstances, "list", map[string]any{"tenantId": "globex"}, nil), api.CodeAccessDenied, "tenantId")
		wantCode(t, "globex's instance by id", acme.call(bus.ResourceInstances, "get", api.IDRequest{ID: g.instance.ID}, nil), api.CodeNotFound, "")
		wantCode(t, "globex's account by id", acme.call(bus.ResourceAccounts, "get", api.IDRequest{ID: g.account.ID}, nil), api.CodeNotFound, "")
		wantCode(t, "globex's pool as acme's", acme.call(bus.ResourceInstances, "create", api.InstanceCreateRequest{PoolID: g.pool.ID, Flavor: "small"}, nil), api.CodeInvalidInput, "poolId")
		wantCode(t, "delete globex's secret", acme.call(bus.ResourceSecrets, "delete", api.IDRequest{ID: g.secret.ID}, nil), api.CodeNotFound, "")
		var list api.List[api.Secret]
		acme.must(bus.ResourceSecrets, "list", api.ListRequest{}, &list)
		if len(list.Items) != 1 || list.Items[0].ID != a.secret.ID {
			t.Fatalf("acme's secrets: %+v", list.Items)
		}
	})

	t.Run("services hold least privilege", func(t *testing.T) {
		acc := s.connect(t, "accounts", s.ServiceCreds("accounts"), "_INBOX_svc_accounts")
		prov := s.connect(t, "provider-hetzner", s.ServiceCreds("provider-hetzner"), "_INBOX_svc_provider-hetzner")
		body := api.SecretResolveRequest{TenantID: "acme", Ref: a.secret.Ref}
		// accounts checks references, never holds a value
		assertRefused(t, acc, []refusal{{"resolve", bus.SecretsResolve, body}})
		// providers keep no state and touch no tenant subject
		assertRefused(t, prov, []refusal{
			{"JetStream API", "$JS.API.STREAM.INFO.KV_" + bus.BucketSecrets, api.Empty{}},
			{"KV write", "$KV." + bus.BucketSecrets + ".acme.x", body},
			{"event", bus.Event("acme", bus.ResourceInstances, a.instance.ID, "running"), body},
			{"tenant command", bus.Command("acme", bus.ResourceSecrets, "list"), api.ListRequest{}},
		})
		if _, err := prov.nc.SubscribeSync("compute.internal.provider.proxmox.>"); err != nil {
			t.Fatal(err)
		}
		prov.denied.wait(t, `Subscription to "compute.internal.provider.proxmox.>"`)
		if _, err := acc.nc.SubscribeSync("_INBOX_svc_provider-hetzner.>"); err != nil {
			t.Fatal(err)
		}
		acc.denied.wait(t, `Subscription to "_INBOX_svc_provider-hetzner.>"`)
	})

	// Both tenants finish their walkthrough: the denials changed nothing.
	finish(t, acme, a)
	finish(t, globex, g)
	if n := len(s.Emu.Emulator().Servers()); n != 0 {
		t.Fatalf("emulator holds %d servers after both deletes", n)
	}
}

// refusal is a request a user's permissions must stop.
type refusal struct {
	name, subject string
	body          any
}

// assertRefused sends every request of cases at once as c (each can only
// wait out deniedTimeout) and then asserts, one subtest each, that the
// server reported the publish violation and the request failed UNAVAILABLE.
func assertRefused(t *testing.T, c *client, cases []refusal) {
	t.Helper()
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	for i, tc := range cases {
		wg.Go(func() { errs[i] = c.request(tc.subject, tc.body, nil, deniedTimeout) })
	}
	wg.Wait()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.denied.wait(t, fmt.Sprintf("Publish to %q", tc.subject))
			wantCode(t, "request", errs[i], api.CodeUnavailable, "")
		})
	}
}

// served is the number of requests service's endpoint answered
// ($SRV.STATS, as admin).
func (s *stack) served(t *testing.T, service, endpoint string) int {
	t.Helper()
	msg, err := s.Admin.Request("$SRV.STATS."+service, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stats micro.Stats
	if err := json.Unmarshal(msg.Data, &stats); err != nil {
		t.Fatal(err)
	}
	for _, ep := range stats.Endpoints {
		if ep.Name == endpoint {
			return ep.NumRequests
		}
	}
	t.Fatalf("%s has no endpoint %s", service, endpoint)
	return 0
}

// lastStored returns the last message any stream holds on subject (nil
// when none does).
func (s *stack) lastStored(t *testing.T, subject string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(s.Admin)
	if err != nil {
		t.Fatal(err)
	}
	name, err := js.StreamNameBySubject(ctx, subject)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return msg.Data
}
