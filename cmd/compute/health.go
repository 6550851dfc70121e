package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/services/accounts"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	robot "better-compute.io/compute/services/provider-hetzner-robot"
	proxmox "better-compute.io/compute/services/provider-proxmox"
	"better-compute.io/compute/services/secrets"
	"better-compute.io/compute/services/tenants"
)

// healthTarget is what `compute health --service` checks of one service:
// its micro service answers PING, and the JetStream assets it keeps state
// in answer (a stream without a leader does not). The reconciler's work
// consumers are per tenant account (reconciler.WorkConsumer), created with the
// tenant's first work, so none is required.
type healthTarget struct {
	micro   string
	buckets []string
	streams []string
}

// healthTargets are the services of `compute serve`, by serve name.
var healthTargets = map[string]healthTarget{
	"secrets":    {micro: secrets.ServiceName, buckets: []string{bus.BucketSecrets}},
	"accounts":   {micro: accounts.ServiceName, buckets: []string{bus.BucketAccounts, bus.BucketPools}},
	"reconciler": {micro: "reconciler", buckets: []string{bus.BucketInstances}, streams: []string{bus.StreamWork}},
	// providers keep no state
	"provider-hetzner":       {micro: "provider-" + hetzner.ProviderID},
	"provider-proxmox":       {micro: "provider-" + proxmox.ProviderID},
	"tenants":                {micro: tenants.ServiceName, buckets: []string{bus.BucketTenants}},
	"provider-hetzner-robot": {micro: "provider-" + robot.ProviderID},
}

// lookupHealthTarget finds a service by its serve name or its micro name;
// any other name is a micro service checked by PING only. It also returns
// the serve name, which names the service's own inbox prefix.
func lookupHealthTarget(name string) (string, healthTarget) {
	if t, ok := healthTargets[name]; ok {
		return name, t
	}
	for serve, t := range healthTargets {
		if t.micro == name {
			return serve, t
		}
	}
	return name, healthTarget{micro: name}
}

func healthCmd(g *globals) *cobra.Command {
	var service, url, caFile string
	cmd := &cobra.Command{
		Use:   "health (--service NAME | --http URL)",
		Short: "Check that a service or an HTTP endpoint is up (exit 0) or not (exit 1, one-line reason)",
		Long: "--service pings the micro service ($SRV.PING.<name>) and, for secrets, accounts and the\n" +
			"reconciler, checks that their JetStream buckets, streams and consumer answer. It connects as\n" +
			"--user (env COMPUTE_NATS_USER) with the service's inbox prefix, _INBOX_svc_<service>, so a\n" +
			"service's own user may run it: it is the container health check of deploy/compose.yaml.\n" +
			"--http GETs the URL and wants a status below 500 (the emulators, nats-server's /healthz).",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
			defer cancel()
			var report string
			var err error
			switch {
			case (service == "") == (url == ""):
				return fmt.Errorf("give exactly one of --service and --http")
			case url != "":
				report, err = checkHTTP(ctx, url, caFile)
			default:
				report, err = g.checkService(ctx, service)
			}
			if err != nil {
				return fmt.Errorf("unhealthy: %s", strings.ReplaceAll(err.Error(), "\n", " "))
			}
			_, err = fmt.Fprintln(g.out, "healthy: "+report)
			return err
		},
	}
	cmd.Flags().StringVar(&service, "service", "",
		"service to check: secrets, accounts, reconciler, poolctl, provider-hetzner, provider-proxmox, or any micro service name")
	cmd.Flags().StringVar(&url, "http", "", "URL to GET instead")
	cmd.Flags().StringVar(&caFile, "http-ca", "", "PEM file of the CA that signed the --http server's certificate")
	return cmd
}

// checkService connects, pings the service and checks its JetStream assets.
func (g *globals) checkService(ctx context.Context, name string) (string, error) {
	serve, t := lookupHealthTarget(name)
	if g.conn.InboxPrefix == "" {
		g.conn.InboxPrefix = bus.InboxRoot + "_svc_" + serve
	}
	nc, err := g.connect()
	if err != nil {
		return "", err
	}
	defer nc.Close()
	ping, err := pingService(ctx, nc, t.micro)
	if err != nil {
		return "", err
	}
	checked, err := checkJetStream(ctx, nc, t)
	if err != nil {
		return "", err
	}
	report := fmt.Sprintf("%s %s (id %s) answers ping", ping.Name, ping.Version, ping.ID)
	if len(checked) > 0 {
		report += "; jetstream: " + strings.Join(checked, ", ")
	}
	return report, nil
}

// pingService sends a micro PING to $SRV.PING.<name> and returns the first
// answer. Errors: no instance answers, the deadline passed, a foreign reply.
func pingService(ctx context.Context, nc *nats.Conn, name string) (*micro.Ping, error) {
	subject, err := micro.ControlSubject(micro.PingVerb, name, "")
	if err != nil {
		return nil, err
	}
	msg, err := nc.RequestWithContext(ctx, subject, nil)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("no instance of service %q answers %s", name, subject)
	}
	if err != nil {
		return nil, fmt.Errorf("ping %s: %w", subject, err)
	}
	var ping micro.Ping
	if err := json.Unmarshal(msg.Data, &ping); err != nil || ping.Type != micro.PingResponseType || ping.Name != name {
		return nil, fmt.Errorf("ping %s: unexpected reply %.80q", subject, msg.Data)
	}
	return &ping, nil
}

// checkJetStream asks for the info of every bucket and stream of t, and
// returns their names.
func checkJetStream(ctx context.Context, nc *nats.Conn, t healthTarget) ([]string, error) {
	if len(t.buckets)+len(t.streams) == 0 {
		return nil, nil
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	var checked []string
	for _, b := range t.buckets {
		if _, err := js.KeyValue(ctx, b); err != nil {
			return nil, fmt.Errorf("jetstream bucket %s: %w", b, err)
		}
		checked = append(checked, b)
	}
	for _, s := range t.streams {
		if _, err := js.Stream(ctx, s); err != nil {
			return nil, fmt.Errorf("jetstream stream %s: %w", s, err)
		}
		checked = append(checked, s)
	}
	return checked, nil
}

// checkHTTP GETs url and wants a status below 500. caFile, when set, is
// the only CA trusted for an https URL.
func checkHTTP(ctx context.Context, url, caFile string) (string, error) {
	client := &http.Client{}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return "", err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return "", fmt.Errorf("%s holds no PEM certificate", caFile)
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= http.StatusInternalServerError {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return fmt.Sprintf("GET %s: %s", url, resp.Status), nil
}
