package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/fake"
	"better-compute.io/compute/conformance/live"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// certifyOptions are the flags of `compute certify`.
type certifyOptions struct {
	providerID      string
	profiles        []string
	fake            bool
	reportDir       string
	config          string
	offer, image    string
	accountTenant   string
	prefix          string
	seed            uint64
	scaleMachines   int
	port            int
	powerObservable bool
	only            []string
	logsFile        string
	liveOptions
}

func certifyCmd(g *globals) *cobra.Command {
	o := certifyOptions{}
	cmd := &cobra.Command{
		Use:   "certify --provider ID [--fake] [--profile core,cloud,...] [--report DIR] [--port N] [--seed-count N]",
		Short: "Run the provider conformance program against a provider and print the verdict",
		Long: "Runs every behaviour of the conformance registry against the provider over its bus subjects\n" +
			"(compute.internal.provider.<id>.*) and prints one line per behaviour and the verdict.\n\n" +
			"With --fake nothing outside this process is needed: an embedded NATS server, the secrets\n" +
			"service, the provider's emulator and the provider service start in-process (providers: " +
			strings.Join(fake.Providers(), ", ") + "),\n" +
			"and every profile the fake can drive is claimed unless --profile names some.\n\n" +
			"Without --fake the provider must be served on the bus (--nats); give the account config with\n" +
			"secret references only (--config '{\"token\":\"env://HCLOUD_TOKEN\"}'), an offer and an image;\n" +
			"the default profile is core. Values of env:// references set in this environment are what the\n" +
			"secrets lane looks for.\n\n" +
			"With --live the certifier starts NATS, the secrets service and the provider service itself, points the\n" +
			"provider's endpoint at its own HTTP fault layer (--port) in front of the real API (--api-url), and runs\n" +
			"every lane there, fault, durable and scale included (--seed-count machines, default 20), within a budget\n" +
			"(--max-machines, --max-requests) and sweeping everything it made, also after Ctrl-C. --record DIR\n" +
			"keeps the HTTP exchanges (secrets redacted); --replay DIR certifies from them without credentials\n" +
			"and fails naming the first request that is not in the recording.\n\n" +
			"report.json and junit.xml go to " + conformance.DefaultReportDir + "/<provider> unless --report chooses. The last lines are\n" +
			"VERDICT: <verdict> and CERTIFIED: <provider> passed …, or FAILED: <provider>: <first failing behaviour> …;\n" +
			"the exit status is 0 only when the verdict is CERTIFIED. --provider hetzner is hetzner-cloud.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.seedCountSet = cmd.Flags().Changed("seed-count") || cmd.Flags().Changed("scale-machines")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runCertify(ctx, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.providerID, "provider", "", "provider id to certify (required)")
	f.StringSliceVar(&o.profiles, "profile", nil, "profiles claimed: "+strings.Join(conformance.Profiles, ","))
	f.BoolVar(&o.fake, "fake", false, "start NATS, secrets, the emulator and the provider in-process (credential-free)")
	f.StringVar(&o.reportDir, "report", "",
		"directory to write report.json and junit.xml into (default "+conformance.DefaultReportDir+"/<provider>)")
	f.StringVar(&o.config, "config", "", "account config as JSON, secret references only (live runs)")
	f.StringVar(&o.offer, "offer", "", "offer id create accepts (default: the fake's)")
	f.StringVar(&o.image, "image", "", "image create accepts (default: the fake's)")
	f.StringVar(&o.accountTenant, "account-tenant", "root",
		"tenant of the account (live runs; env:// references resolve for the tenants of the secrets service's --secret-store env, default root)")
	f.StringVar(&o.prefix, "prefix", "", "prefix of machine names and idempotency keys (default random)")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the run's random choices (default from the clock)")
	f.IntVar(&o.scaleMachines, "seed-count", conformance.DefaultScaleMachines,
		fmt.Sprintf("machines seeded for the scale lane (a --live run seeds %d unless this is set)", liveSeedCount))
	f.IntVar(&o.scaleMachines, "scale-machines", conformance.DefaultScaleMachines, "machines seeded for the scale lane")
	_ = f.MarkDeprecated("scale-machines", "use --seed-count")
	f.IntVar(&o.port, "port", 0,
		"loopback port of the provider endpoint under test: the emulator's with --fake, the fault layer's with --live (default any free one)")
	f.BoolVar(&o.powerObservable, "power-observable", true, "get reports the effect of power actions (live runs)")
	f.StringSliceVar(&o.only, "only", nil, "run only these behaviour ids (the others are INCOMPLETE)")
	f.StringVar(&o.logsFile, "logs", "", "file the provider's log lines go to, scanned by the secrets lane (live runs)")
	f.BoolVar(&o.live, "live", false,
		"start the provider in-process against its real API, through the certifier's HTTP fault layer (providers: "+
			strings.Join(live.Providers(), ", ")+")")
	f.StringVar(&o.apiURL, "api-url", "", "the real API's base URL of a live run (default the provider's)")
	f.IntVar(&o.maxMachines, "max-machines", live.DefaultMaxMachines, "a live run's budget of machines created")
	f.IntVar(&o.maxRequests, "max-requests", live.DefaultMaxRequests, "a live run's budget of API requests")
	f.DurationVar(&o.pollInterval, "poll-interval", 0, "how often the provider polls an API action in a live run (default the provider's)")
	f.StringVar(&o.record, "record", "", "live run: record the provider's HTTP exchanges into DIR (secrets redacted)")
	f.StringVar(&o.replay, "replay", "", "live run: answer from the recording in DIR instead of the API (no credentials needed)")
	cmd.MarkFlagsMutuallyExclusive("fake", "live")
	cmd.MarkFlagsMutuallyExclusive("record", "replay")
	_ = cmd.MarkFlagRequired("provider")
	return cmd
}

// runCertify builds the subject, runs the program, writes the report and
// fails unless the verdict is CERTIFIED.
func runCertify(ctx context.Context, g *globals, o certifyOptions) error {
	name := o.providerID
	if id, ok := providerAliases[name]; ok {
		o.providerID = id
	}
	if o.reportDir == "" {
		o.reportDir = filepath.Join(conformance.DefaultReportDir, name)
	}
	if o.port < 0 || o.port > 65535 {
		return api.InvalidInput("port", "--port %d is not a TCP port (0..65535)", o.port)
	}
	s, done, err := certifySubject(ctx, g, &o)
	if err != nil {
		return err
	}
	if len(o.profiles) > 0 {
		s.Profiles = o.profiles
	}
	if o.offer != "" {
		s.OfferID = o.offer
	}
	if o.image != "" {
		s.Image = o.image
	}
	s.Prefix, s.ScaleMachines = o.prefix, o.scaleMachines
	report, err := conformance.Certify(ctx, s, conformance.Options{Progress: g.out, Seed: o.seed, Only: o.only})
	doneErr := done(report)
	if err != nil {
		return err
	}
	if err := report.WriteFiles(o.reportDir); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	fmt.Fprintf(g.out, "report: %s, %s\n",
		filepath.Join(o.reportDir, conformance.ReportJSONFile), filepath.Join(o.reportDir, conformance.ReportJUnitFile))
	fmt.Fprintf(g.out, "VERDICT: %s\n", report.Verdict)
	if doneErr != nil {
		return doneErr
	}
	if report.Verdict != conformance.VerdictCertified {
		return fmt.Errorf("verdict %s: %s", report.Verdict, report.Headline(name))
	}
	fmt.Fprintln(g.out, report.Headline(name))
	return nil
}

// providerAliases are the provider names BigFleet's certification page
// uses, by the provider id they stand for.
var providerAliases = map[string]string{"hetzner": "hetzner-cloud"}

// certifySubject starts the fake or the live run, or connects to the bus,
// and builds the subject from the flags (a replay sets o's choices to the
// recording's); done releases what it started once the run has ended
// (report nil when it could not run) and reports what went wrong around
// the run (a spent budget, a replay that diverged, a sweep that failed).
func certifySubject(ctx context.Context, g *globals, o *certifyOptions) (conformance.Subject, func(*conformance.Report) error, error) {
	if o.fake {
		env, err := fake.Start(ctx, o.providerID, fake.Options{Port: o.port})
		if err != nil {
			return conformance.Subject{}, nil, err
		}
		return env.Subject, func(*conformance.Report) error { env.Close(); return nil }, nil
	}
	if o.live {
		return liveSubject(ctx, g, o)
	}
	if o.config == "" || o.offer == "" || o.image == "" {
		return conformance.Subject{}, nil, fmt.Errorf("a run on the bus needs --config, --offer and --image (or use --fake or --live)")
	}
	cfg, err := parseCertifyConfig(o.config)
	if err != nil {
		return conformance.Subject{}, nil, err
	}
	nc, err := g.connect()
	if err != nil {
		return conformance.Subject{}, nil, err
	}
	s := conformance.Subject{
		ProviderID: o.providerID, NC: nc,
		Account:         api.ProviderAccount{ID: api.NewID(api.PrefixAccount), TenantID: o.accountTenant, Version: 1, Config: cfg},
		PowerObservable: o.powerObservable, SecretValues: envSecrets(cfg),
	}
	if o.logsFile != "" {
		s.Logs = func() []byte {
			data, _ := os.ReadFile(o.logsFile) // unreadable: nothing captured, the lane is INCOMPLETE
			return data
		}
	}
	return s, func(*conformance.Report) error { nc.Close(); return nil }, nil
}

// parseCertifyConfig parses --config: a JSON object with secret references only.
// Errors: INVALID_INPUT naming config.
func parseCertifyConfig(text string) (map[string]any, error) {
	var cfg map[string]any
	if err := json.Unmarshal([]byte(text), &cfg); err != nil {
		return nil, api.InvalidInput("config", "--config is not a JSON object: %v", err)
	}
	if err := provider.CheckPlainSecrets("config", cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// envSecrets returns the values, in this environment, of the env://
// references anywhere in v.
func envSecrets(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		if ref, err := api.ParseSecretRef(x); err == nil && ref.Scheme == api.SchemeEnv {
			if val := os.Getenv(ref.Name); val != "" {
				out = append(out, val)
			}
		}
	case map[string]any:
		for _, item := range x {
			out = append(out, envSecrets(item)...)
		}
	case []any:
		for _, item := range x {
			out = append(out, envSecrets(item)...)
		}
	}
	return out
}
