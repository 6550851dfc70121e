package api

import (
	"strings"
	"testing"
)

func TestCheckPoolAccessNamesTheField(t *testing.T) {
	ok := func() *PoolAccess {
		return &PoolAccess{User: "root", PrivateKey: "secret://acme/sec_01jdzzzzzzzzzzzzzzzzzzzzzz",
			Configure: &AccessStep{Script: "true"}, Drain: &AccessStep{Hook: "drain", OnFailure: OnFailureContinue}}
	}
	if err := CheckPoolAccess(ok()); err != nil {
		t.Fatalf("valid access refused: %v", err)
	}
	if err := CheckPoolAccess(nil); err != nil {
		t.Fatalf("no access refused: %v", err)
	}
	cases := []struct {
		path   string
		change func(*PoolAccess)
	}{
		{"access.user", func(a *PoolAccess) { a.User = "Root user" }},
		{"access.privateKey", func(a *PoolAccess) { a.PrivateKey = "-----BEGIN OPENSSH PRIVATE KEY-----" }},
		{"access.port", func(a *PoolAccess) { a.Port = 70000 }},
		{"access.publicKey", func(a *PoolAccess) { a.PublicKey = "ssh-ed25519 not-base64" }},
		{"access.hostKeyPolicy", func(a *PoolAccess) { a.HostKeyPolicy = "trust" }},
		{"access.configure", func(a *PoolAccess) { a.Configure.Hook = "join" }},
		{"access.configure", func(a *PoolAccess) { a.Configure.Script = "" }},
		{"access.configure.onFailure", func(a *PoolAccess) { a.Configure.OnFailure = OnFailureContinue }},
		{"access.configure.timeoutMs", func(a *PoolAccess) { a.Configure.TimeoutMs = -1 }},
		{"access.drain.hook", func(a *PoolAccess) { a.Drain.Hook = "../../bin/sh" }},
		{"access.drain.onFailure", func(a *PoolAccess) { a.Drain.OnFailure = OnFailureRetry }},
	}
	for _, c := range cases {
		a := ok()
		c.change(a)
		err := CheckPoolAccess(a)
		if !IsCode(err, CodeInvalidInput) || AsComputeError(err).Path() != c.path {
			t.Errorf("%s: got %v", c.path, err)
		}
	}
	// A mistyped key is not quoted back.
	a := ok()
	a.PrivateKey = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA"
	if err := CheckPoolAccess(a); err == nil || strings.Contains(err.Error(), "b3BlbnNzaC1rZXktdjEAAAAA") {
		t.Fatalf("mistyped key quoted: %v", err)
	}
}
