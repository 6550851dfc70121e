package authtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// platformKey is a fresh private key as PEM, its public key line and its
// raw seed (the leak scan looks for all of the private forms).
type platformKey struct{ pem, public, seed, body string }

func newPlatformKey(t *testing.T) platformKey {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	text := string(pem.EncodeToMemory(block))
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return platformKey{pem: text, public: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))), seed: string(priv.Seed()),
		body: strings.Join(lines[1:len(lines)-1], "")}
}

// accessWalkthrough stores the platform's key, creates a pool with access
// (configure and drain) on w's account and an instance in it, waits until
// it is configured, runs an exec and reads a log (both kept as replies),
// and deletes the instance: the key is resolved under the reconciler's
// NATS user of deploy/nats.conf.
func accessWalkthrough(t *testing.T, c *client, w *tenantWorld, key platformKey) {
	t.Helper()
	var sec api.Secret
	c.must(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: "platform-ssh", Value: key.pem}, &sec)
	var pool api.Pool
	c.must(bus.ResourcePools, "create", api.PoolCreateRequest{Name: "hosts", Class: api.PoolClassProvider, Agent: api.PoolAgentNone,
		ProviderAccountID: w.account.ID, Flavors: []api.Flavor{{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"}},
		Access: &api.PoolAccess{User: "root", PrivateKey: sec.Ref, PublicKey: key.public,
			Configure: &api.AccessStep{Script: "echo configured $COMPUTE_INSTANCE_ID"}, Drain: &api.AccessStep{Script: "echo drained"}}}, &pool)
	// The pool holds its key: the secrets service (its NATS user of
	// deploy/nats.conf reading compute_pools) refuses the key's delete.
	err := c.call(bus.ResourceSecrets, "delete", api.IDRequest{ID: sec.ID}, nil)
	if !api.IsCode(err, api.CodeInvalidState) {
		t.Fatalf("delete of the pool's key: %v, want INVALID_STATE", err)
	}
	if got := api.AsComputeError(err).Details.Pools; !slices.Equal(got, []string{pool.ID}) {
		t.Fatalf("delete of the pool's key: details.pools %v, want [%s]", got, pool.ID)
	}
	var inst api.Instance
	c.must(bus.ResourceInstances, "create", api.InstanceCreateRequest{PoolID: pool.ID, Flavor: "small", Name: c.tenant + "-host-1"}, &inst)
	eventually(t, c.tenant+" host configured", func() bool {
		c.must(bus.ResourceInstances, "get", api.IDRequest{ID: inst.ID}, &inst)
		return inst.Status.Phase == api.PhaseRunning && inst.Status.Access != nil && inst.Status.Access.Configure != nil &&
			inst.Status.Access.Configure.State == api.StepSucceeded
	})
	if tail := inst.Status.Access.Configure.OutputTail; tail != "configured "+inst.ID+"\n" {
		t.Fatalf("configure output %q", tail)
	}
	var out api.InstanceExecReply
	c.must(bus.ResourceInstances, "exec", api.InstanceExecRequest{ID: inst.ID, Command: "echo hello"}, &out)
	if out.Stdout != "hello\n" || out.ExitCode != 0 {
		t.Fatalf("exec: %+v", out)
	}
	var logs api.InstanceLogsReply
	c.must(bus.ResourceInstances, "logs", api.InstanceLogsRequest{ID: inst.ID, Source: api.LogSourceCloudInit, Lines: 5}, &logs)
	if len(logs.Lines) == 0 {
		t.Fatal("no cloud-init lines")
	}
	c.must(bus.ResourceInstances, "delete", api.IDRequest{ID: inst.ID}, nil)
	eventually(t, c.tenant+" host deleted", func() bool {
		return api.IsCode(c.call(bus.ResourceInstances, "get", api.IDRequest{ID: inst.ID}, nil), api.CodeNotFound)
	})
}
