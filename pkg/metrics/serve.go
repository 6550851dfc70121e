package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Path is where Serve answers scrapes.
const Path = "/metrics"

// Handler serves Registry in the Prometheus exposition formats; a
// collector's error is logged to log and the metrics gathered are
// served anyway.
func Handler(log zerolog.Logger) http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{
		ErrorLog:      promLogger{log},
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      Registry, // counts promhttp's own errors
	})
}

// promLogger adapts zerolog to promhttp's Println logger.
type promLogger struct{ log zerolog.Logger }

func (l promLogger) Println(v ...any) { l.log.Warn().Msg(fmt.Sprint(v...)) }

// Server is a running metrics endpoint.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Serve listens on addr (host:port; port 0 picks one) and answers
// scrapes on Path until Close. Errors: addr cannot be listened on.
func Serve(addr string, log zerolog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, Handler(log))
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Msg("metrics endpoint stopped")
		}
	}()
	return s, nil
}

// URL is the scrape URL: http://<address>/metrics.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + Path }

// Close stops serving, letting scrapes under way finish for up to 5 s.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}
