package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/natsauth"
)

// globals are the flags every command shares.
type globals struct {
	conn     bus.ConnectOptions
	tenant   string
	timeout  time.Duration
	logLevel string
	// output is the -o format ("" for the default, see format).
	output string
	out    io.Writer
	// denials turns a publish nats-server refuses into ACCESS_DENIED
	// naming the missing scope, instead of a timeout.
	denials *natsauth.Denials
	// instancePool is --pool of the instances commands that take an
	// instance ID|NAME: the pool a name is looked up in ("": every pool).
	instancePool string
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newRoot() *cobra.Command { return newRootWith(os.Stdout) }

// newRootWith builds the command tree printing replies to out.
func newRootWith(out io.Writer) *cobra.Command {
	g := &globals{out: out, denials: &natsauth.Denials{}}
	root := &cobra.Command{
		Use:           "compute",
		Short:         "Run and drive the compute control plane over NATS",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := root.PersistentFlags()
	f.StringVar(&g.conn.URL, "nats", envOr("COMPUTE_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL(s) (env COMPUTE_NATS_URL)")
	f.StringVar(&g.conn.User, "user", os.Getenv("COMPUTE_NATS_USER"), "NATS user (env COMPUTE_NATS_USER)")
	f.StringVar(&g.conn.Password, "password", "", "NATS password (env COMPUTE_NATS_PASSWORD; prefer the env var)")
	f.StringVar(&g.conn.CredsFile, "creds", os.Getenv("COMPUTE_NATS_CREDS"),
		"NATS credentials file (env COMPUTE_NATS_CREDS; or its JWT and seed in env COMPUTE_NATS_JWT and COMPUTE_NATS_SEED)")
	f.StringVar(&g.conn.NkeyFile, "nkey", os.Getenv("COMPUTE_NATS_NKEY"), "NATS nkey seed file (env COMPUTE_NATS_NKEY)")
	f.StringVar(&g.conn.CAFile, "tls-ca", os.Getenv("COMPUTE_NATS_CA"), "CA file pinning the NATS server certificate (env COMPUTE_NATS_CA)")
	f.StringVar(&g.conn.CertFile, "tls-cert", os.Getenv("COMPUTE_NATS_CERT"), "client certificate file (env COMPUTE_NATS_CERT)")
	f.StringVar(&g.conn.KeyFile, "tls-key", os.Getenv("COMPUTE_NATS_KEY"), "client key file (env COMPUTE_NATS_KEY)")
	f.StringVar(&g.conn.InboxPrefix, "inbox-prefix", os.Getenv("COMPUTE_NATS_INBOX_PREFIX"),
		"prefix of reply subjects (env COMPUTE_NATS_INBOX_PREFIX; default _INBOX_<tenant> for client verbs, "+
			"_INBOX_svc_<service> for serve; see deploy/nats.conf)")
	f.StringVar(&g.tenant, "tenant", envOr("COMPUTE_TENANT", "demo"), "tenant id (env COMPUTE_TENANT)")
	f.DurationVar(&g.timeout, "timeout", 15*time.Second, "request timeout")
	f.StringVar(&g.logLevel, "log-level", envOr("COMPUTE_LOG_LEVEL", "info"), "log level for services: debug, info, warn, error")
	addOutputFlag(root, g)
	root.PersistentPreRun = func(*cobra.Command, []string) {
		if g.conn.Password == "" {
			g.conn.Password = os.Getenv("COMPUTE_NATS_PASSWORD")
		}
		if g.conn.Token == "" {
			g.conn.Token = os.Getenv("COMPUTE_NATS_TOKEN")
		}
		// a credential as two variables (natsauth.EnvDir: compose's env_file)
		if jwt := os.Getenv(natsauth.EnvJWT); jwt != "" && g.conn.CredsFile == "" {
			g.conn.Extra = append(g.conn.Extra, nats.UserJWTAndSeed(jwt, os.Getenv(natsauth.EnvSeed)))
		}
	}
	root.AddCommand(upCmd(g), serveCmd(g), emulatorCmd(g), healthCmd(g),
		secretsCmd(g), accountsCmd(g), poolsCmd(g), instancesCmd(g), certifyCmd(g), providersCmd(g),
		tenantsCmd(g), natsInitCmd(g))
	for _, c := range root.Commands() {
		refuseUnknownSubcommands(c)
	}
	return root
}

// refuseUnknownSubcommands makes a command group (one with subcommands and
// nothing to run itself) fail on an unknown subcommand, with suggestions,
// instead of printing its help and exiting 0; alone, it prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.SuggestionsMinimumDistance = 2
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return errors.New(msg + " (see --help)")
	}
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
}

// logger is the zerolog logger services write to (JSON lines on stderr).
func (g *globals) logger() zerolog.Logger {
	level, err := zerolog.ParseLevel(g.logLevel)
	if err != nil {
		level = zerolog.InfoLevel
	}
	return zerolog.New(os.Stderr).Level(level).With().Timestamp().Logger()
}

// connect dials NATS as a client (fails fast if nothing answers). Replies
// come to the tenant's own inbox prefix, _INBOX_<tenant>, the only inbox a
// tenant user of deploy/nats.conf may subscribe to.
func (g *globals) connect() (*nats.Conn, error) {
	if !api.ValidTenant(g.tenant) {
		return nil, api.InvalidInput("tenant",
			"--tenant %q is not a tenant id: 1 to 63 lower-case letters, digits and '-', starting with a letter or digit", g.tenant)
	}
	o := g.conn
	o.Name = "compute-cli"
	o.FailFast = true
	o.ErrorHandler = g.denials.Handler
	if o.InboxPrefix == "" {
		o.InboxPrefix = bus.InboxRoot + "_" + g.tenant
	}
	nc, err := bus.Connect(o)
	if errors.Is(err, nats.ErrNoServers) {
		return nil, fmt.Errorf("no NATS server answers at %s (is `compute up` running?): %w", o.URL, err)
	}
	if err != nil {
		return nil, err
	}
	if err := nc.FlushTimeout(g.timeout); err != nil {
		nc.Close()
		return nil, fmt.Errorf("no NATS server answers at %s (is `compute up` running?): %w", o.URL, err)
	}
	return nc, nil
}

// withClient connects (g.connect) and runs fn with a client of the tenant
// on that connection, closed when fn returns. Every request of the tenant
// verbs goes through the client package.
func (g *globals) withClient(fn func(ctx context.Context, c *client.Client) error) error {
	nc, err := g.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	return fn(context.Background(), client.New(nc, g.tenant, g.timeout).WithCaller(g.denials.Call))
}

func (g *globals) print(v any) error {
	enc := json.NewEncoder(g.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// exactArgs is exactArgs(n) with an error that names the arguments
// missing or extra by the command's usage line ("instances wait ID").
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		return fmt.Errorf("usage: %s (%d argument(s) wanted, %d given)", cmd.UseLine(), n, len(args))
	}
}

// selfName is how the user ran this binary (e.g. bin/compute), for hints
// that name a command to run next.
func selfName() string {
	if len(os.Args) > 0 && os.Args[0] != "" && !strings.Contains(os.Args[0], "go-build") {
		return os.Args[0]
	}
	return "compute"
}
