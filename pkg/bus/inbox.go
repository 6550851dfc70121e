package bus

import "strings"

// InboxRoot starts every reply subject services answer: "_INBOX." (the NATS
// default), "_INBOX_<tenant>." or "_INBOX_svc_<service>." (see
// ConnectOptions.InboxPrefix).
const InboxRoot = "_INBOX"

// ReplyMapRoot starts the reply subjects nats-server gives a request that
// crossed accounts through a service import (a tenant account's command,
// pkg/natsauth): the reply travels back only to the importing account, so
// the caller cannot aim it elsewhere.
const ReplyMapRoot = "_R_."

// IsInbox reports whether subject is a reply inbox (starts with InboxRoot).
// Services answer only inboxes: a reply subject is chosen by the caller, and
// a service's reply published on, say, another tenant's event subject or a
// "$KV." subject would forge an event or a record with the service's
// permissions. A reply mapped by a service import (ReplyMapRoot) counts as
// an inbox: it can only reach the importing account.
func IsInbox(subject string) bool {
	return strings.HasPrefix(subject, InboxRoot) || strings.HasPrefix(subject, ReplyMapRoot)
}
