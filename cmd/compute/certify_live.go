package main

import (
	"context"
	"fmt"
	"time"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/live"
)

// liveSeedCount is the scale lane's inventory of a live run unless
// --seed-count says otherwise: real machines cost money.
const liveSeedCount = 20

// liveOptions are the flags of `compute certify --live`.
type liveOptions struct {
	live                     bool
	apiURL                   string
	maxRequests, maxMachines int
	pollInterval             time.Duration
	record, replay           string
	seedCountSet             bool
}

// liveWarning is printed before a live run touches the API.
const liveWarning = "WARNING: a live run creates, changes and deletes machines in the project of the account's token:\n" +
	"use a throwaway project. At most %d machines and %d API requests; everything it made is swept at the end,\n" +
	"also after Ctrl-C.\n"

// liveSubject starts a live run (conformance/live) from the flags: the
// provider service in-process, its endpoint pointed at the certifier's
// fault layer in front of the real API (--api-url) or of a recording
// (--replay, whose run choices replace the flags'). done checks the fault
// layer (budget, replay divergence), writes the recording's run file and
// sweeps.
func liveSubject(ctx context.Context, g *globals, o *certifyOptions) (conformance.Subject, func(*conformance.Report) error, error) {
	lo := live.Options{APIURL: o.apiURL, Port: o.port, MaxRequests: o.maxRequests, MaxMachines: o.maxMachines,
		PollInterval: o.pollInterval, Record: o.record, Replay: o.replay}
	switch {
	case o.replay != "":
		run, err := live.ReadRun(o.replay)
		if err != nil {
			return conformance.Subject{}, nil, fmt.Errorf("read the recording: %w", err)
		}
		o.providerID, o.offer, o.image, o.profiles = run.ProviderID, run.OfferID, run.Image, run.Profiles
		o.prefix, o.seed, o.scaleMachines = run.Prefix, run.Seed, run.ScaleMachines
	case o.config == "":
		return conformance.Subject{}, nil, fmt.Errorf(
			`a live run needs --config with the token's secret reference, e.g. --config '{"token":"env://HCLOUD_TOKEN"}' (or --replay DIR)`,
		)
	default:
		cfg, err := parseCertifyConfig(o.config)
		if err != nil {
			return conformance.Subject{}, nil, err
		}
		lo.Config = cfg
	}
	if !o.seedCountSet && o.replay == "" {
		o.scaleMachines = liveSeedCount
	}
	if o.replay == "" {
		fmt.Fprintf(g.out, liveWarning, o.maxMachines, o.maxRequests)
	}
	lo.OfferID, lo.Image = o.offer, o.image
	env, err := live.Start(ctx, o.providerID, lo)
	if err != nil {
		return conformance.Subject{}, nil, err
	}
	o.offer, o.image = env.Subject.OfferID, env.Subject.Image
	done := func(report *conformance.Report) error {
		layerErr := env.Proxy.Err()
		requests, creates := env.Proxy.Spent()
		var runErr error
		if report != nil {
			runErr = env.WriteRun(live.Run{ProviderID: o.providerID, OfferID: o.offer, Image: o.image, Profiles: report.Profiles,
				Prefix: report.Prefix, Seed: report.Seed, ScaleMachines: o.scaleMachines})
		}
		swept, sweepErr := env.Sweep(context.WithoutCancel(ctx))
		closeErr := env.Close()
		fmt.Fprintf(g.out, "live: %d API requests, %d creates, %d machines swept\n", requests, creates, swept)
		for _, err := range []error{layerErr, runErr, sweepErr, closeErr} {
			if err != nil {
				return fmt.Errorf("live run: %w", err)
			}
		}
		return nil
	}
	return env.Subject, done, nil
}
