package robot

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"better-compute.io/compute/pkg/api"
)

// ServerRequestLimit is Robot's request limit of the server endpoints
// (GET /server, GET/POST /server/{n}): 200 an hour, per endpoint group.
// Every provider call reads a server through them, so this provider
// reports them as the account's rate limit.
const ServerRequestLimit = 200

// serverRequestWindow is the window of ServerRequestLimit.
const serverRequestWindow = time.Hour

// ledger is the requests this process sent to one account's server
// endpoints within the last serverRequestWindow. Robot reports no
// remaining count (only a RATE_LIMIT_EXCEEDED once spent), so every
// reply of those endpoints is observed as the account's rate limit from
// this count (api.RateLimit: limit 200, remaining 200 less the count,
// refilled at 200 an hour, full an hour after the last request): the
// reconciler paces the account's passes with it, so waiting bootstraps
// and other calls of one account share the 200 instead of spending them
// and waiting out a RATE_LIMIT_EXCEEDED. Guess: the window is sliding and
// counts per account (the docs say neither); requests of other tools and
// other replicas are not counted (the reconciler keeps a reserve).
type ledger struct {
	mu   sync.Mutex
	sent []time.Time
}

// add counts one request sent at now and returns the account's rate
// limit after it.
func (l *ledger) add(now time.Time) api.RateLimit {
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := l.sent[:0]
	for _, t := range l.sent {
		if now.Sub(t) < serverRequestWindow {
			keep = append(keep, t)
		}
	}
	l.sent = append(keep, now)
	return api.RateLimit{Limit: ServerRequestLimit, Remaining: max(ServerRequestLimit-len(l.sent), 0),
		RefillPerSecond: ServerRequestLimit / serverRequestWindow.Seconds(), ResetAt: now.Add(serverRequestWindow)}
}

// ledgers are the ledgers by account id, shared by the clients of one
// Definition (a new account version keeps its count).
type ledgers struct {
	mu   sync.Mutex
	byID map[string]*ledger
}

func (ls *ledgers) of(account string) *ledger {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.byID == nil {
		ls.byID = map[string]*ledger{}
	}
	l := ls.byID[account]
	if l == nil {
		l = &ledger{}
		ls.byID[account] = l
	}
	return l
}

// serverEndpoint reports whether req goes to a server endpoint (GET
// /server, GET or POST /server/{n}), counted by ServerRequestLimit.
func serverEndpoint(req *http.Request) bool {
	p := strings.Trim(req.URL.Path, "/")
	return (req.Method == http.MethodGet || req.Method == http.MethodPost) && (p == "server" || strings.HasPrefix(p, "server/"))
}
