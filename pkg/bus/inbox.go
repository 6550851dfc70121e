package bus

import "strings"

// InboxRoot starts every reply subject services answer: "_INBOX." (the NATS
// default), "_INBOX_<tenant>." or "_INBOX_svc_<service>." (see
// ConnectOptions.InboxPrefix).
const InboxRoot = "_INBOX"

// IsInbox reports whether subject is a reply inbox (starts with InboxRoot).
// Services answer only inboxes: a reply subject is chosen by the caller, and
// a service's reply published on, say, another tenant's event subject or a
// "$KV." subject would forge an event or a record with the service's
// permissions.
func IsInbox(subject string) bool { return strings.HasPrefix(subject, InboxRoot) }
