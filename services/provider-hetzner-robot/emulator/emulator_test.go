package emulator

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	hrobot "github.com/syself/hrobot-go"
	"github.com/syself/hrobot-go/models"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/sshemu"
)

func start(t *testing.T, opts Options) (*Server, hrobot.RobotClient) {
	t.Helper()
	if opts.SSH == nil {
		opts.SSH = sshemu.NewFleet(zerolog.Nop())
		t.Cleanup(opts.SSH.Close)
	}
	s, err := Start(opts, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c := hrobot.NewBasicAuthClient("robot-user", "robot-pass")
	c.SetBaseURL(s.URL())
	return s, c
}

func signer(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hostname(t *testing.T, s *Server, n int, key ssh.Signer) (string, string, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/server/"+strconv.Itoa(n), nil)
	req.SetBasicAuth("robot-user", "robot-pass")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := access.Run(ctx, access.Target{Address: "127.0.0.1:" + resp.Header.Get(SSHPortHeader), User: "root", Key: key},
		access.Command{Line: "hostname"})
	return res.Stdout, res.HostKey, err
}

// TestRescueInstallBoot: arm rescue, hw reset boots the rescue system
// (hostname rescue, its own host key), installimage -n names the
// installed system, the next reset boots it with a new host key; a
// failed install boots nothing that answers SSH.
func TestRescueInstallBoot(t *testing.T) {
	s, c := start(t, Options{User: "robot-user", Password: "robot-pass"})
	e := s.Emulator()
	if err := e.AddServer(ServerSpec{Number: 321}); err != nil {
		t.Fatal(err)
	}
	key := signer(t)
	k, err := c.KeySet(&models.KeySetInput{Name: "platform", Data: string(ssh.MarshalAuthorizedKey(key.PublicKey()))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KeySet(&models.KeySetInput{Name: "again", Data: string(ssh.MarshalAuthorizedKey(key.PublicKey()))}); !models.IsError(err, models.ErrorCodeKeyAlreadyExists) {
		t.Fatalf("second upload: %v, want KEY_ALREADY_EXISTS", err)
	}
	name0, seedKey, err := hostname(t, s, 321, key)
	if err != nil || name0 != "Ubuntu-2404-noble-amd64-base\n" {
		t.Fatalf("seed system: %q %v", name0, err)
	}
	r, err := c.BootRescueSet(321, &models.RescueSetInput{OS: "linux", AuthorizedKey: k.Fingerprint})
	if err != nil || !r.Active || r.Password == "" {
		t.Fatalf("rescue: %+v %v", r, err)
	}
	if _, err := c.BootRescueSet(321, &models.RescueSetInput{OS: "linux"}); !models.IsError(err, models.ErrorCodeBootAlreadyEnabled) {
		t.Fatalf("second arming: %v", err)
	}
	if _, err := c.ResetSet(321, &models.ResetSetInput{Type: "hw"}); err != nil {
		t.Fatal(err)
	}
	name, rescueKey, err := hostname(t, s, 321, key)
	if err != nil || name != "rescue\n" || rescueKey == seedKey {
		t.Fatalf("rescue system: %q %s (seed %s) %v", name, rescueKey, seedKey, err)
	}
	if r, _ := c.BootRescueGet(321); r.Active {
		t.Fatal("rescue still armed after the boot that used it")
	}
	ctx := context.Background()
	port := e.Machine(321, true).Port()
	if _, err := access.Run(ctx, access.Target{Address: "127.0.0.1:" + strconv.Itoa(port), User: "root", Key: key},
		access.Command{Line: "installimage -a -n bm-321 -r yes -l 1 -i /root/images/Ubuntu-2404.tar.zst"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetSet(321, &models.ResetSetInput{Type: "hw"}); err != nil {
		t.Fatal(err)
	}
	name, osKey, err := hostname(t, s, 321, key)
	if err != nil || name != "bm-321\n" || osKey == seedKey || osKey == rescueKey {
		t.Fatalf("installed system: %q %s %v", name, osKey, err)
	}
	// A failed install: the disks boot nothing.
	e.SetInstallImage(321, InstallFail)
	if _, err := c.BootRescueSet(321, &models.RescueSetInput{OS: "linux"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetSet(321, &models.ResetSetInput{Type: "hw"}); err != nil {
		t.Fatal(err)
	}
	port = e.Machine(321, true).Port()
	res, err := access.Run(ctx, access.Target{Address: "127.0.0.1:" + strconv.Itoa(port), User: "root", Key: key},
		access.Command{Line: "installimage -a -n bm-x"})
	if err != nil || res.ExitCode != 1 {
		t.Fatalf("failing install: %+v %v", res, err)
	}
	if _, err := c.ResetSet(321, &models.ResetSetInput{Type: "hw"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hostname(t, s, 321, key); err == nil {
		t.Fatal("half-installed disks answered SSH")
	}
	if _, ok := e.Installed(321); ok {
		t.Fatal("half-installed disks reported installed")
	}
}

// TestErrorShapes: the documented codes for the endpoints used.
func TestErrorShapes(t *testing.T) {
	s, c := start(t, Options{})
	if err := s.Emulator().AddServer(ServerSpec{Number: 7, ResetTypes: []string{}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		call func() error
		code models.ErrorCode
	}{
		{"unknown server", func() error { _, err := c.ServerGet(8); return err }, models.ErrorCodeServerNotFound},
		{"no reset", func() error { _, err := c.ResetSet(7, &models.ResetSetInput{Type: "hw"}); return err }, models.ErrorCodeResetNotAvailable},
		{"no keys", func() error { _, err := c.KeyGetList(); return err }, models.ErrorCodeNotFound},
		{"bad os", func() error { _, err := c.BootRescueSet(7, &models.RescueSetInput{OS: "dos"}); return err }, models.ErrorCodeInvalidInput},
		{"unknown key", func() error {
			_, err := c.BootRescueSet(7, &models.RescueSetInput{OS: "linux", AuthorizedKey: "00:11"})
			return err
		}, models.ErrorCodeInvalidInput},
	}
	for _, tc := range cases {
		if err := tc.call(); !models.IsError(err, tc.code) {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
}

// TestRateLimitAndLoginBlock: a spent hourly limit is 403
// RATE_LIMIT_EXCEEDED until the window ends; three bad logins block the
// address for ten minutes, good logins included.
func TestRateLimitAndLoginBlock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, c := start(t, Options{User: "robot-user", Password: "robot-pass", Clock: clk, Limits: map[string]int{LimitResetPost: 1}})
	if err := s.Emulator().AddServer(ServerSpec{Number: 9}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetSet(9, &models.ResetSetInput{Type: "hw"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetSet(9, &models.ResetSetInput{Type: "hw"}); !models.IsError(err, models.ErrorCodeRateLimitExceeded) {
		t.Fatalf("second reset: %v", err)
	}
	if _, err := c.ResetGet(9); err != nil {
		t.Fatalf("another class is not limited: %v", err)
	}
	clk.Advance(time.Hour)
	if _, err := c.ResetSet(9, &models.ResetSetInput{Type: "hw"}); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	bad := hrobot.NewBasicAuthClient("robot-user", "wrong")
	bad.SetBaseURL(s.URL())
	for i := 0; i < BadLoginLimit; i++ {
		if _, err := bad.ServerGet(9); !models.IsError(err, models.ErrorCodeUnauthorized) {
			t.Fatalf("bad login %d: %v", i, err)
		}
	}
	if _, err := c.ServerGet(9); !models.IsError(err, "BLOCKED") {
		t.Fatalf("while blocked: %v", err)
	}
	clk.Advance(BlockDuration)
	if _, err := c.ServerGet(9); err != nil {
		t.Fatalf("after the block: %v", err)
	}
}

// TestSSHAddressAndBootDelay: a server keeps one SSH address whatever it
// boots, and after a reset its system answers there only once the boot
// delay has passed.
func TestSSHAddressAndBootDelay(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s, c := start(t, Options{User: "robot-user", Password: "robot-pass", Clock: fake, BootDelay: 2 * time.Minute})
	e := s.Emulator()
	if err := e.AddServer(ServerSpec{Number: 321}); err != nil {
		t.Fatal(err)
	}
	key := signer(t)
	k, err := c.KeySet(&models.KeySetInput{Name: "platform", Data: string(ssh.MarshalAuthorizedKey(key.PublicKey()))})
	if err != nil {
		t.Fatal(err)
	}
	port := func() string {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+"/server/321", nil)
		req.SetBasicAuth("robot-user", "robot-pass")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.Header.Get(SSHPortHeader)
	}
	before := port()
	if _, err := c.BootRescueSet(321, &models.RescueSetInput{OS: "linux", AuthorizedKey: k.Fingerprint}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetSet(321, &models.ResetSetInput{Type: "hw"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hostname(t, s, 321, key); err == nil {
		t.Fatal("the rescue system answered before the boot delay passed")
	}
	fake.Advance(2 * time.Minute)
	if host, _, err := hostname(t, s, 321, key); err != nil || host != "rescue\n" {
		t.Fatalf("after the boot delay: %q, %v", host, err)
	}
	if after := port(); after != before || after == "" {
		t.Fatalf("SSH address %s before the reset, %s after: want one address", before, after)
	}
}
