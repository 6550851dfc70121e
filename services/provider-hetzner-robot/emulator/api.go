package emulator

import (
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// reply is an answer before it is written.
type reply struct {
	status int
	body   any
	header map[string]string
}

// apiError is the body of every error: {"error":{status,code,message}}
// plus, for RATE_LIMIT_EXCEEDED, max_request and interval.
type apiError struct {
	Status     int    `json:"status"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	MaxRequest int    `json:"max_request,omitempty"`
	Interval   int    `json:"interval,omitempty"`
	// BlockedFor is how many seconds the address stays blocked
	// (BLOCKED only). Guess: the docs do not say what a blocked address
	// receives.
	BlockedFor int `json:"blocked_for,omitempty"`
}

func fail(status int, code, message string) reply {
	return reply{status: status, body: map[string]apiError{"error": {Status: status, Code: code, Message: message}}}
}

func ok(body any) reply { return reply{status: http.StatusOK, body: body} }

// ServeHTTP answers the webservice: auth and the login block first, then
// the route (its hourly limit counted), one Calls entry per request that
// passed auth.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		write(w, fail(http.StatusBadRequest, "INVALID_INPUT", "invalid input"))
		return
	}
	e.mu.Lock()
	rep := e.answer(r)
	e.mu.Unlock()
	e.log.Debug().Str("method", r.Method).Str("path", r.URL.Path).Int("status", rep.status).Msg("robot emulator call")
	write(w, rep)
}

func write(w http.ResponseWriter, rep reply) {
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(rep.status)
	if rep.body != nil {
		_ = json.NewEncoder(w).Encode(rep.body)
	}
}

// answer runs one request; callers hold mu.
func (e *Emulator) answer(r *http.Request) reply {
	if rep, passed := e.authenticate(r); !passed {
		return rep
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	e.calls = append(e.calls, describeCall(r))
	class, handle := e.route(r.Method, parts)
	if handle == nil {
		return fail(http.StatusNotFound, "NOT_FOUND", "Not Found")
	}
	if allowed, limit := e.limits.take(class); !allowed {
		rep := fail(http.StatusForbidden, "RATE_LIMIT_EXCEEDED", "Rate limit exceeded")
		body := rep.body.(map[string]apiError)["error"]
		body.MaxRequest, body.Interval = limit, int(LimitInterval/time.Second)
		rep.body = map[string]apiError{"error": body}
		return rep
	}
	return handle(r, parts)
}

// authenticate checks Basic auth and the login block of the client's
// address: 401 UNAUTHORIZED for a bad login; BadLoginLimit of them block
// the address for BlockDuration, during which every request (good logins
// too) is 403 BLOCKED with blocked_for seconds.
//
// Guess: the code BLOCKED, status 403 and blocked_for; the docs only say
// that the address is blocked for 10 minutes after 3 failed logins.
func (e *Emulator) authenticate(r *http.Request) (reply, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	st := e.logins[host]
	if st == nil {
		st = &loginState{}
		e.logins[host] = st
	}
	now := e.now()
	if now.Before(st.blockedUntil) {
		rep := fail(http.StatusForbidden, "BLOCKED", "IP address blocked after too many failed login attempts")
		body := rep.body.(map[string]apiError)["error"]
		body.BlockedFor = int((st.blockedUntil.Sub(now) + time.Second - 1) / time.Second)
		rep.body = map[string]apiError{"error": body}
		return rep, false
	}
	user, pass, has := r.BasicAuth()
	good := has && user != "" && pass != ""
	if e.opts.User != "" {
		good = has && subtle.ConstantTimeCompare([]byte(user), []byte(e.opts.User)) == 1 &&
			subtle.ConstantTimeCompare([]byte(pass), []byte(e.opts.Password)) == 1
	}
	if good {
		st.failures = 0
		return reply{}, true
	}
	st.failures++
	if st.failures >= BadLoginLimit {
		st.failures, st.blockedUntil = 0, now.Add(BlockDuration)
	}
	return fail(http.StatusUnauthorized, "UNAUTHORIZED", "Unauthorized"), false
}

// describeCall is a Calls entry: "METHOD /path" and the form fields that
// say what a call does.
func describeCall(r *http.Request) string {
	s := r.Method + " " + r.URL.Path
	for _, f := range []string{"type", "os", "server_name", "authorized_key", "name"} {
		if vs, ok := r.PostForm[f]; ok {
			s += " " + f + "=" + strings.Join(vs, ",")
		}
	}
	return s
}

type handler func(r *http.Request, parts []string) reply

// route picks the handler and limit class of a request.
func (e *Emulator) route(method string, p []string) (string, handler) {
	switch {
	case len(p) == 1 && p[0] == "server" && method == http.MethodGet:
		return LimitServer, e.listServers
	case len(p) == 2 && p[0] == "server" && method == http.MethodGet:
		return LimitServer, e.getServer
	case len(p) == 2 && p[0] == "server" && method == http.MethodPost:
		return LimitServer, e.nameServer
	case len(p) == 2 && p[0] == "reset" && method == http.MethodGet:
		return LimitResetGet, e.getReset
	case len(p) == 2 && p[0] == "reset" && method == http.MethodPost:
		return LimitResetPost, e.postReset
	case len(p) == 3 && p[0] == "boot" && p[2] == "rescue":
		switch method {
		case http.MethodGet:
			return LimitBoot, e.getRescue
		case http.MethodPost:
			return LimitBoot, e.postRescue
		case http.MethodDelete:
			return LimitBoot, e.deleteRescue
		}
	case len(p) == 3 && p[0] == "order" && p[1] == "server" && p[2] == "product" && method == http.MethodGet:
		return LimitOrder, e.listProducts
	case len(p) == 4 && p[0] == "order" && p[1] == "server" && p[2] == "product" && method == http.MethodGet:
		return LimitOrder, e.getProduct
	case len(p) == 1 && p[0] == "key" && method == http.MethodGet:
		return LimitKeyGet, e.listKeys
	case len(p) == 1 && p[0] == "key" && method == http.MethodPost:
		return LimitKeyWrite, e.postKey
	case len(p) == 2 && p[0] == "key" && method == http.MethodGet:
		return LimitKeyGet, e.getKey
	case len(p) == 2 && p[0] == "key" && method == http.MethodDelete:
		return LimitKeyWrite, e.deleteKey
	}
	return "", nil
}

// lookup is server p[1], or the 404 SERVER_NOT_FOUND reply.
func (e *Emulator) lookup(p []string) (*server, *reply) {
	n, err := strconv.Atoi(p[1])
	srv := e.servers[n]
	if err != nil || srv == nil {
		rep := fail(http.StatusNotFound, "SERVER_NOT_FOUND", "server not found")
		return nil, &rep
	}
	e.settle(srv)
	return srv, nil
}

// serverJSON is the list shape of a server; detail adds the feature flags.
func serverJSON(s *server, detail bool) map[string]any {
	m := map[string]any{"server_ip": s.ip, "server_ipv6_net": s.ipv6, "server_number": s.spec.Number,
		"server_name": s.spec.Name, "product": s.spec.Product, "dc": s.spec.DC, "traffic": "unlimited",
		"status": "ready", "cancelled": false, "paid_until": "2027-01-31", "ip": []string{s.ip}, "subnet": nil}
	if detail {
		m["reset"], m["rescue"], m["vnc"], m["windows"], m["plesk"], m["cpanel"] = true, true, true, false, false, false
		m["wol"], m["hot_swap"], m["linked_storagebox"] = true, false, nil
	}
	return map[string]any{"server": m}
}

func (e *Emulator) listServers(*http.Request, []string) reply {
	if len(e.servers) == 0 {
		return fail(http.StatusNotFound, "SERVER_NOT_FOUND", "no servers found") // Guess: as GET /key's NOT_FOUND
	}
	out := []any{}
	for _, s := range e.sortedServers() {
		out = append(out, serverJSON(s, false))
	}
	return ok(out)
}

func (e *Emulator) getServer(_ *http.Request, p []string) reply {
	srv, rep := e.lookup(p)
	if rep != nil {
		return *rep
	}
	out := ok(serverJSON(srv, true))
	if port := e.sshPort(srv); port != 0 {
		out.header = map[string]string{SSHPortHeader: strconv.Itoa(port)}
	}
	return out
}

// nameServer is POST /server/{n} server_name=…: INVALID_INPUT without
// it. Guess: names of up to 100 characters (the docs give no limit).
func (e *Emulator) nameServer(r *http.Request, p []string) reply {
	srv, rep := e.lookup(p)
	if rep != nil {
		return *rep
	}
	name, has := r.PostForm["server_name"]
	if !has || len(name) != 1 || len(name[0]) > 100 {
		return fail(http.StatusBadRequest, "INVALID_INPUT", "invalid input")
	}
	srv.spec.Name = name[0]
	return ok(serverJSON(srv, true))
}

func (e *Emulator) getReset(_ *http.Request, p []string) reply {
	srv, rep := e.lookup(p)
	if rep != nil {
		return *rep
	}
	if len(srv.spec.ResetTypes) == 0 {
		return fail(http.StatusNotFound, "RESET_NOT_AVAILABLE", "reset not available")
	}
	status := "running"
	if !srv.powered {
		status = "stopped" // Guess: the value set of operating_status is undocumented
	}
	return ok(map[string]any{"reset": map[string]any{"server_ip": srv.ip, "server_ipv6_net": srv.ipv6,
		"server_number": srv.spec.Number, "type": srv.spec.ResetTypes, "operating_status": status}})
}

// postReset is POST /reset/{n} type=…: 404 RESET_NOT_AVAILABLE for a
// server without resets, 400 INVALID_INPUT for a type it does not list
// (Guess: the docs list INVALID_INPUT only generally).
func (e *Emulator) postReset(r *http.Request, p []string) reply {
	srv, rep := e.lookup(p)
	if rep != nil {
		return *rep
	}
	if len(srv.spec.ResetTypes) == 0 {
		return fail(http.StatusNotFound, "RESET_NOT_AVAILABLE", "reset not available")
	}
	kind := r.PostForm.Get("type")
	if !slices.Contains(srv.spec.ResetTypes, kind) {
		return fail(http.StatusBadRequest, "INVALID_INPUT", "invalid input")
	}
	e.reset(srv, kind)
	return ok(map[string]any{"reset": map[string]any{"server_ip": srv.ip, "server_ipv6_net": srv.ipv6,
		"server_number": srv.spec.Number, "type": kind}})
}

// rescueJSON is the rescue boot option: the active shape (scalars) for
// an arming, else the inactive one (arrays of choices).
func (e *Emulator) rescueJSON(srv *server, a *rescueArm, active bool) reply {
	m := map[string]any{"server_ip": srv.ip, "server_ipv6_net": srv.ipv6, "server_number": srv.spec.Number,
		"os": []string{"linux", "vkvm"}, "arch": []int{64, 32}, "active": false, "password": nil,
		"authorized_key": []any{}, "host_key": []any{}}
	if a != nil {
		keys := []any{}
		for _, fp := range a.keys {
			if k := e.keys[fp]; k != nil {
				keys = append(keys, map[string]any{"key": map[string]any{"name": k.Name, "fingerprint": k.Fingerprint,
					"type": k.Type, "size": k.Size}})
			}
		}
		m["os"], m["arch"], m["active"], m["password"], m["authorized_key"] = a.os, 64, active, a.password, keys
	}
	return ok(map[string]any{"rescue": m})
}

func (e *Emulator) getRescue(_ *http.Request, p []string) reply {
	srv, rep := e.lookup(p)
	if rep != nil {
		return *rep
	}
	return e.rescueJSON(srv, srv.rescue, srv.rescue != nil)
}

// postRescue arms the rescue system for the next boot: os linux or vkvm,
// authorized_key fingerprints of stored keys (authorized_key,
// authorized_key[] or repeated). 409 BOOT_ALREADY_ENABLED while one is
// armed (Guess: the client libraries name the code, the docs do not say
// when); 400 INVALID_INPUT for another os or an unknown key (Guess).
func (e *Emulator) postRescue(r *http.Request, p []string) reply {
	srv, rep := e.lookup(p)
	if rep != nil {
		return *rep
	}
	if srv.rescue != nil {
		return fail(http.StatusConflict, "BOOT_ALREADY_ENABLED", "boot option already enabled")
	}
	osName := r.PostForm.Get("os")
	if osName != "linux" && osName != "vkvm" {
		return fail(http.StatusBadRequest, "INVALID_INPUT", "invalid input")
	}
	fps := append(slices.Clone(r.PostForm["authorized_key"]), r.PostForm["authorized_key[]"]...)
	for _, fp := range fps {
		if e.keys[fp] == nil {
			return fail(http.StatusBadRequest, "INVALID_INPUT", "invalid input")
		}
	}
	srv.rescue = &rescueArm{os: osName, password: randomPassword(), keys: fps}
	srv.last = srv.rescue
	return e.rescueJSON(srv, srv.rescue, true)
}

func (e *Emulator) deleteRescue(_ *http.Request, p []string) reply {
	srv, rep := e.lookup(p)
	if rep != nil {
		return *rep
	}
	srv.rescue = nil
	return e.rescueJSON(srv, nil, false)
}

func (e *Emulator) listKeys(*http.Request, []string) reply {
	if len(e.keys) == 0 {
		return fail(http.StatusNotFound, "NOT_FOUND", "no keys found")
	}
	fps := make([]string, 0, len(e.keys))
	for fp := range e.keys {
		fps = append(fps, fp)
	}
	slices.Sort(fps)
	out := []any{}
	for _, fp := range fps {
		out = append(out, map[string]any{"key": e.keys[fp]})
	}
	return ok(out)
}

// postKey stores name and data (an OpenSSH public key): 201; 409
// KEY_ALREADY_EXISTS for key material already stored (under any name);
// 400 INVALID_INPUT for a name missing or data that is no key.
func (e *Emulator) postKey(r *http.Request, _ []string) reply {
	name, data := r.PostForm.Get("name"), r.PostForm.Get("data")
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(data))
	if name == "" || err != nil {
		return fail(http.StatusBadRequest, "INVALID_INPUT", "invalid input")
	}
	fp := ssh.FingerprintLegacyMD5(pub)
	if e.keys[fp] != nil {
		return fail(http.StatusConflict, "KEY_ALREADY_EXISTS", "key already exists")
	}
	k := &key{Name: name, Fingerprint: fp, Type: keyType(pub.Type()), Size: keySize(pub), Data: strings.TrimSpace(data),
		CreatedAt: e.now().UTC().Format("2006-01-02 15:04:05")}
	e.keys[fp] = k
	return reply{status: http.StatusCreated, body: map[string]any{"key": k}}
}

func keyType(t string) string {
	switch {
	case t == ssh.KeyAlgoRSA:
		return "RSA"
	case t == ssh.KeyAlgoED25519:
		return "ED25519"
	case strings.HasPrefix(t, "ecdsa"):
		return "ECDSA"
	}
	return strings.ToUpper(t)
}

// keySize is the key's size in bits (Guess for RSA: the wire length of
// the modulus, as the docs' examples show 2048 or 4096).
func keySize(pub ssh.PublicKey) int {
	if ck, ok := pub.(ssh.CryptoPublicKey); ok {
		if s, ok := ck.CryptoPublicKey().(interface{ Size() int }); ok {
			return s.Size() * 8
		}
	}
	return 256
}

func (e *Emulator) getKey(_ *http.Request, p []string) reply {
	fp, _ := url.PathUnescape(p[1])
	if k := e.keys[fp]; k != nil {
		return ok(map[string]any{"key": k})
	}
	return fail(http.StatusNotFound, "NOT_FOUND", "key not found")
}

func (e *Emulator) deleteKey(_ *http.Request, p []string) reply {
	fp, _ := url.PathUnescape(p[1])
	if e.keys[fp] == nil {
		return fail(http.StatusNotFound, "NOT_FOUND", "key not found")
	}
	delete(e.keys, fp)
	return reply{status: http.StatusOK}
}
