package emulator

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"
)

// Server is an Emulator served over HTTPS on loopback.
type Server struct {
	emu   *Emulator
	ln    net.Listener
	srv   *http.Server
	caPEM []byte
	done  chan struct{}
}

// Start creates an Emulator from opts and serves it over TLS on
// opts.ListenAddr (default 127.0.0.1:0) with a certificate signed by the
// CA kept in opts.CAFile and opts.CAKeyFile (made and written there when
// they do not both exist; a fresh one when they are not set). Only
// HTTP/1.1 is offered, as pveproxy does (and so reason phrases exist).
// Errors: a CA pair that does not parse, a file that cannot be written,
// an address that cannot be listened on.
func Start(opts Options) (*Server, error) {
	cert, caPEM, err := serverCert(opts.CAFile, opts.CAKeyFile)
	if err != nil {
		return nil, err
	}
	emu := New(opts)
	ln, err := net.Listen("tcp", emu.opts.ListenAddr)
	if err != nil {
		return nil, err
	}
	s := &Server{emu: emu, ln: ln, caPEM: caPEM, done: make(chan struct{})}
	s.srv = &http.Server{
		Handler:           emu,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"http/1.1"},
		},
		// A non-nil empty map disables HTTP/2.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	go func() {
		defer close(s.done)
		if err := s.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return s, nil
}

// URL is the API base URL, "https://127.0.0.1:PORT/api2/json", as the
// Telmate client wants it.
func (s *Server) URL() string { return s.BaseURL() + apiPrefix }

// BaseURL is "https://127.0.0.1:PORT", under which /_emulator/ lives.
func (s *Server) BaseURL() string { return "https://" + s.ln.Addr().String() }

// CACertPEM is the PEM of the CA that signed the server's certificate;
// pin it in the client.
func (s *Server) CACertPEM() []byte { return append([]byte(nil), s.caPEM...) }

// Emulator returns the served Emulator.
func (s *Server) Emulator() *Emulator { return s.emu }

// Close stops the server, releasing hung calls.
func (s *Server) Close() error {
	s.emu.ClearFaults()
	err := s.srv.Close()
	<-s.done
	return err
}
