package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/console"
)

// consoleService is the name `compute serve` knows the web console by.
const consoleService = "console"

// consoleConfig is what the web console reads: flags of `compute up` and
// `compute serve console`.
type consoleConfig struct {
	addr        string        // --console-addr; empty: no console (compute up)
	idleTimeout time.Duration // --console-idle-timeout
}

// consoleFlags binds the console's flags; def is --console-addr's default.
func consoleFlags(cmd *cobra.Command, c *consoleConfig, def, usage string) {
	cmd.Flags().StringVar(&c.addr, "console-addr", envOr("COMPUTE_CONSOLE_ADDR", def), usage+" (env COMPUTE_CONSOLE_ADDR)")
	cmd.Flags().DurationVar(&c.idleTimeout, "console-idle-timeout", console.DefaultIdleTimeout,
		"console: a session ends after this long without a page request")
}

// startConsole serves the console on c.addr in front of the NATS server at
// url; each signed-in session connects there as its tenant's user
// (caFile, when set, pins the server's CA). Errors: INVALID_CONFIG
// naming --console-addr when it is empty, or --nats when a URL carries
// credentials (console.CheckNATSURL); the address is taken or malformed.
func startConsole(c consoleConfig, url, caFile string, log zerolog.Logger) (*console.Server, error) {
	if c.addr == "" {
		return nil, api.InvalidConfig("--console-addr", "--console-addr is empty: give the host:port the console listens on")
	}
	if err := console.CheckNATSURL(url); err != nil {
		return nil, err
	}
	var opts []nats.Option
	if caFile != "" {
		opts = append(opts, nats.RootCAs(caFile))
	}
	s, err := console.Start(console.Options{Dial: console.DialNATS(url, opts...), IdleTimeout: c.idleTimeout,
		Logger: log.With().Str("service", consoleService).Logger()}, c.addr)
	if err != nil {
		return nil, fmt.Errorf("console on %s: %w (--console-addr picks another)", c.addr, err)
	}
	return s, nil
}

// withoutConsole splits "console" off the service names of `compute
// serve`: the console holds no connection of its own (each session has
// its tenant's), so it needs neither the service connection nor stores.
func withoutConsole(names []string) (rest []string, console bool) {
	rest = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == consoleService })
	return rest, len(rest) != len(names)
}
