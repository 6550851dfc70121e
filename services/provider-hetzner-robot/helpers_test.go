package robot

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/pkg/sshemu"
	"better-compute.io/compute/services/provider-hetzner-robot/emulator"
)

// Test fixtures.
const (
	testUser    = "#ws+robot-test"
	testPass    = "robot-test-pass-9c8b7a"
	testUserRef = "env://ROBOT_USER"
	testPassRef = "env://ROBOT_PASSWORD"
	testTenant  = "acme"
)

var testStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var testSecrets = providertest.Secrets{testUserRef: testUser, testPassRef: testPass}

// env is an emulator with servers 101 (EX44, free), 102 (AX52, free) and
// 103 (named "db-primary" by someone else), and the provider over the bus.
type env struct {
	srv    *emulator.Server
	emu    *emulator.Emulator
	clock  *clock.Fake
	remote provider.Remote
	acct   api.ProviderAccount
	key    ssh.Signer
}

func newEnv(t testing.TB, limits map[string]int) *env {
	t.Helper()
	fake := clock.NewFake(testStart)
	fleet := sshemu.NewFleet(zerolog.Nop())
	t.Cleanup(fleet.Close)
	srv, err := emulator.Start(emulator.Options{User: testUser, Password: testPass, Clock: fake, SSH: fleet, Limits: limits}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	for _, s := range []emulator.ServerSpec{{Number: 101, Product: "EX44"}, {Number: 102, Product: "AX52", DC: "NBG1-DC3"},
		{Number: 103, Product: "EX101", Name: "db-primary"}} {
		if err := srv.Emulator().AddServer(s); err != nil {
			t.Fatal(err)
		}
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{srv: srv, emu: srv.Emulator(), clock: fake, key: key}
	e.remote = providertest.Serve(t, Definition(WithEndpoint(srv.URL())), fake, testSecrets)
	e.acct = api.ProviderAccount{ID: "pacct_01jq7g8v6k5m4n3p2r1s0t9w8x", TenantID: testTenant, Version: 1,
		Config: map[string]any{FieldUser: testUserRef, FieldPassword: testPassRef,
			FieldSSHPublicKey: string(ssh.MarshalAuthorizedKey(key.PublicKey())), FieldKeyName: DefaultKeyName}}
	return e
}
