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
	e, err := New(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		e.Close()
		return nil, err
	}
	s := &Server{emulator: e, listener: ln, done: make(chan struct{}),
		http: &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			e.log.Error().Err(err).Msg("robot emulator: serve failed")
		}
	}()
	return s, nil
}

// URL is the webservice's base URL, "http://127.0.0.1:PORT" (the real
// one is https://robot-ws.your-server.de).
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// Emulator is the served emulator, for seeding and assertions.
func (s *Server) Emulator() *Emulator { return s.emulator }

// Close stops serving at once and the emulator's dead port.
func (s *Server) Close() error {
	err := s.http.Close()
	<-s.done
	s.emulator.Close()
	return err
}
