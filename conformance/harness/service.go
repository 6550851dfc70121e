package harness

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

// Service is the provider service on its own bus connection, so it can be
// killed abruptly (the connection closes: replies in flight are never
// sent), restarted with an empty client cache, and reconnected. It
// implements conformance.Service.
type Service struct {
	url string
	def *provider.Defined
	log zerolog.Logger

	mu  sync.Mutex
	nc  *nats.Conn
	svc *bus.Service
}

// Kill closes the service's connection without draining, and returns
// once the server has dropped its subscriptions (a request on describe
// then meets no responders), or ctx ends.
func (s *Service) Kill(ctx context.Context) error {
	s.mu.Lock()
	s.killLocked()
	s.mu.Unlock()
	probe, err := bus.Connect(bus.ConnectOptions{URL: s.url, Name: "probe"})
	if err != nil {
		return err
	}
	defer probe.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := probe.RequestWithContext(pctx, bus.ProviderCall(s.def.ID(), provider.VerbDescribe), []byte("{}"))
		cancel()
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		}
	}
}

func (s *Service) killLocked() {
	if s.nc != nil {
		s.nc.Close()
	}
	s.nc, s.svc = nil, nil
}

// Restart kills the service if it runs and serves the provider again on a
// new connection. Errors: connecting or serving failed.
func (s *Service) Restart(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	nc, err := bus.Connect(bus.ConnectOptions{URL: s.url, Name: "provider-" + s.def.ID()})
	if err != nil {
		return err
	}
	svc, err := provider.Serve(nc, s.def, provider.ServeOptions{Logger: s.log})
	if err != nil {
		nc.Close()
		return err
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return err
	}
	s.nc, s.svc = nc, svc
	return nil
}

// Reconnect drops the service's connection and returns once it is
// connected again (or ctx ends). Errors: the service is not running.
func (s *Service) Reconnect(ctx context.Context) error {
	s.mu.Lock()
	nc := s.nc
	s.mu.Unlock()
	if nc == nil {
		return errors.New("the provider service is not running")
	}
	reconnected := make(chan struct{}, 1)
	nc.SetReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} })
	defer nc.SetReconnectHandler(nil)
	if err := nc.ForceReconnect(); err != nil {
		return err
	}
	select {
	case <-reconnected:
		return nc.Flush()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop stops the service gracefully (Env.Close).
func (s *Service) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svc != nil {
		_ = s.svc.Stop()
	}
	s.killLocked()
}
