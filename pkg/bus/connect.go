package bus

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectOptions says how a service or client reaches NATS.
type ConnectOptions struct {
	// URL of one or more servers, comma-separated (default nats://127.0.0.1:4222).
	URL string
	// Name shown in the server's connection list.
	Name string
	// User and Password, or Token, or CredsFile (a .creds JWT file), or NkeyFile (an nkey seed).
	User, Password, Token, CredsFile, NkeyFile string
	// TLS: CAFile pins the server CA; CertFile and KeyFile present a client certificate.
	CAFile, CertFile, KeyFile string
	// InboxPrefix replaces "_INBOX" as the prefix of reply subjects, so that
	// nats-server permissions can give each user its own inbox space
	// (deploy/nats.conf: "_INBOX_<tenant>" for tenants, "_INBOX_svc_<service>"
	// for services). Empty keeps "_INBOX". It must start with "_INBOX" (see
	// InboxRoot) and hold no wildcard.
	InboxPrefix string
	// ErrorHandler, when set, receives the server's asynchronous errors
	// (e.g. a permissions violation; natsauth.Denials.Handler).
	ErrorHandler nats.ErrHandler
	// Extra options, applied last (e.g. nats.UserJWTAndSeed for
	// credentials held in memory; natsauth.ConnectSys).
	Extra []nats.Option
	// FailFast makes Connect fail when no server answers now, instead of
	// retrying until one does (a CLI run, not a service).
	FailFast bool
}

// Connect dials NATS and keeps reconnecting forever (every 250 ms with
// jitter), also when the first attempt fails (unless o.FailFast), so a
// service started before its server comes up waits for it. Errors: an
// unreadable nkey seed, an inbox prefix not starting with InboxRoot, a
// malformed option or URL, no server answering (FailFast).
func Connect(o ConnectOptions) (*nats.Conn, error) {
	if o.URL == "" {
		o.URL = nats.DefaultURL
	}
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.RetryOnFailedConnect(!o.FailFast),
	}
	switch {
	case o.CredsFile != "":
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	case o.NkeyFile != "":
		opt, err := nats.NkeyOptionFromSeed(o.NkeyFile)
		if err != nil {
			return nil, fmt.Errorf("nkey seed %s: %w", o.NkeyFile, err)
		}
		opts = append(opts, opt)
	case o.Token != "":
		opts = append(opts, nats.Token(o.Token))
	case o.User != "":
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.InboxPrefix != "" {
		if !strings.HasPrefix(o.InboxPrefix, InboxRoot) {
			return nil, fmt.Errorf("inbox prefix %q must start with %q", o.InboxPrefix, InboxRoot)
		}
		opts = append(opts, nats.CustomInboxPrefix(o.InboxPrefix))
	}
	if o.ErrorHandler != nil {
		opts = append(opts, nats.ErrorHandler(o.ErrorHandler))
	}
	if o.CAFile != "" {
		opts = append(opts, nats.RootCAs(o.CAFile))
	}
	if o.CertFile != "" {
		opts = append(opts, nats.ClientCert(o.CertFile, o.KeyFile))
	}
	opts = append(opts, o.Extra...)
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", o.URL, err)
	}
	return nc, nil
}
