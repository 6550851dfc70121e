package emulator

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// Server is an Emulator listening on a TCP address.
type Server struct {
	emulator *Emulator
	listener net.Listener
	http     *http.Server
	done     chan struct{}
}

// Start creates an Emulator with opts and serves it on addr
// ("127.0.0.1:0" picks a free port) until Close.
func Start(opts Options, addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	e := New(opts)
	s := &Server{
		emulator: e,
		listener: ln,
		http:     &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second},
		done:     make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			e.log.Error().Err(err).Msg("emulator: serve failed")
		}
	}()
	return s, nil
}

// URL returns the API endpoint, e.g. "http://127.0.0.1:PORT/v1", ready for
// hcloud.WithEndpoint.
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() + apiPrefix }

// Addr returns the listening address (host:port); the control API is at
// http://Addr/_emulator/.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Emulator returns the served emulator, for Go-side faults and assertions.
func (s *Server) Emulator() *Emulator { return s.emulator }

// Close stops serving at once: open connections are closed, which also
// ends hung calls.
func (s *Server) Close() error {
	err := s.http.Close()
	<-s.done
	return err
}
