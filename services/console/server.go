package console

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Cookies of the console.
const (
	// SessionCookie holds the session token (HttpOnly, SameSite=Strict).
	SessionCookie = "compute_console"
	// signInCSRFCookie holds the CSRF token of the sign-in form.
	signInCSRFCookie = "compute_console_signin"
	// fragmentHeader asks for a page's main section only (the live refresh).
	fragmentHeader = "X-Console-Fragment"
)

// Defaults of Options.
const (
	DefaultIdleTimeout    = 30 * time.Minute
	DefaultRequestTimeout = 10 * time.Second
	DefaultMaxSessions    = 1000
)

// maxFormBytes bounds a POST body (a creds file is about 1 KiB).
const maxFormBytes = 64 << 10

// Options configures a console.
type Options struct {
	// Dial connects as a signed-in tenant (DialNATS in production). Required.
	Dial Dialer
	// IdleTimeout ends a session after this long without a page request;
	// zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// RequestTimeout bounds each call a page makes; zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxSessions bounds the sessions held at once (each holds a NATS
	// connection); a sign-in past it is refused with UNAVAILABLE. Zero
	// means DefaultMaxSessions.
	MaxSessions int
	// Clock measures idleness; nil means the wall clock.
	Clock clock.Clock
	// Logger receives one line per sign-in, sign-out and failed page
	// (never a credential).
	Logger zerolog.Logger
}

// Server is a running console.
type Server struct {
	o        Options
	sessions sessions
	pages    map[string]*page
	mux      *http.ServeMux

	http     *http.Server
	listener net.Listener
	done     chan struct{} // closed when the janitor has stopped
	stop     chan struct{}
	once     sync.Once
}

// New builds a console; serve its Handler, or use Start. Errors: a
// missing Options.Dial.
func New(o Options) (*Server, error) {
	if o.Dial == nil {
		return nil, errors.New("console: Options.Dial is required")
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	s := &Server{o: o, sessions: sessions{m: map[string]*session{}}, pages: parsePages(),
		done: make(chan struct{}), stop: make(chan struct{})}
	s.routes()
	go s.janitor()
	return s, nil
}

// Start builds a console and serves it on addr (host:port; port 0 picks
// one). Errors: New's, and a failed listen.
func Start(o Options, addr string) (*Server, error) {
	s, err := New(o)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.listener = ln
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	return s, nil
}

// URL is where a started console serves (http://host:port).
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// Handler serves the console.
func (s *Server) Handler() http.Handler { return securityHeaders(s.mux) }

// Close stops serving (when started) and ends every session, closing
// their connections.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		if s.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			// Event streams never end on their own: close what Shutdown left.
			if s.http.Shutdown(ctx) != nil {
				_ = s.http.Close()
			}
		}
		s.sessions.closeAll()
	})
}

// janitor ends idle sessions, a quarter of the idle timeout (between a
// second and a minute) after they pass it; a request on an idle session
// ends it at once.
func (s *Server) janitor() {
	defer close(s.done)
	t := time.NewTicker(max(min(s.o.IdleTimeout/4, time.Minute), time.Second))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sessions.expire(s.o.Clock.Now(), s.o.IdleTimeout)
		}
	}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /signin", s.signInForm)
	m.HandleFunc("POST /signin", s.signIn)
	m.HandleFunc("POST /signout", s.signedIn(s.signOut))
	m.HandleFunc("GET /{$}", s.signedIn(s.overview))
	m.HandleFunc("GET /instances", s.signedIn(s.instances))
	m.HandleFunc("GET /instances/{id}", s.signedIn(s.instance))
	m.HandleFunc("GET /offers", s.signedIn(s.offers))
	m.HandleFunc("GET /cost", s.signedIn(s.cost))
	m.HandleFunc("GET /events", s.signedIn(s.events))
	s.mux = m
}

// securityHeaders: scripts and styles only from the console itself (no
// inline script, no CDN), no framing, no sniffing, no referrer, and pages
// are never cached (they show a tenant's data).
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; "+
			"img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// signedIn runs h with the request's live session, which it marks active.
// Without one, a page request is sent to the sign-in form, and a live
// refresh or event stream gets 401 (its script then goes there). A POST
// must carry the session's CSRF token (403 otherwise).
func (s *Server) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.session(r)
		if sess == nil {
			if r.Method == http.MethodGet && r.Header.Get(fragmentHeader) == "" && r.URL.Path != "/events" {
				http.Redirect(w, r, "/signin", http.StatusSeeOther)
				return
			}
			http.Error(w, "signed out", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if !tokensEqual(r.PostFormValue("csrf"), sess.csrf) {
				s.renderError(w, r, sess, api.Errorf(api.CodeAccessDenied, "the form's CSRF token is missing or stale: reload the page"))
				return
			}
		}
		h(w, r, sess)
	}
}

// session is the request's session, if its cookie names one that is not
// idle; an idle one is ended here.
func (s *Server) session(r *http.Request) *session {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return nil
	}
	sess := s.sessions.get(c.Value)
	if sess == nil {
		return nil
	}
	// The event stream and the live refreshes it drives are no activity:
	// an open tab alone keeps no session.
	if r.URL.Path == "/events" || r.Header.Get(fragmentHeader) != "" {
		if sess.idleSince(s.o.Clock.Now(), s.o.IdleTimeout) {
			s.sessions.remove(sess.token)
			return nil
		}
		return sess
	}
	if !sess.touch(s.o.Clock.Now(), s.o.IdleTimeout) {
		s.sessions.remove(sess.token)
		return nil
	}
	return sess
}

// callContext bounds the calls of one page.
func (s *Server) callContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.o.RequestTimeout)
}
