package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/metrics"
	"better-compute.io/compute/pkg/natsauth"
	"better-compute.io/compute/pkg/sshemu"
	"better-compute.io/compute/services/console"
	robotemulator "better-compute.io/compute/services/provider-hetzner-robot/emulator"
	"better-compute.io/compute/services/provider-hetzner/emulator"
	pveemulator "better-compute.io/compute/services/provider-proxmox/emulator"
	"better-compute.io/compute/services/tenants"
)

// upOptions configures a local stack.
type upOptions struct {
	dataDir     string
	natsHost    string
	natsPort    int
	hetznerAddr string
	proxmoxAddr string
	robotAddr   string // the Robot webservice emulator's ("": 127.0.0.1:0)
	services    serviceConfig
	console     consoleConfig // console.addr empty: no web console
}

// stack is everything `compute up` runs in one process.
type stack struct {
	nats    *server.Server
	hetzner *emulator.Server
	proxmox *pveemulator.Server
	robot   *robotemulator.Server
	// nc is the stack's connection as the admin user.
	nc *nats.Conn
	// conns are the services' connections, one per service as its own user.
	conns []*nats.Conn
	// demoCreds is the file of the demo tenant's credential.
	demoCreds string
	stop      func()
	// metrics serves the process's metrics (nil when --metrics-addr is off).
	metrics *metrics.Server
	console *console.Server // nil without --console-addr
	// lock is held on the data directory while the stack runs (dataLock).
	lock *flock.Flock
	// ssh is the emulated machines' SSH endpoints (both emulators').
	ssh *sshemu.Fleet
}

// startStack starts embedded NATS (JetStream under dataDir), the Hetzner
// Cloud and Proxmox VE API emulators and every service, on loopback. A
// taken address fails before anything starts (see listenAddr.err); any
// other failure stops what had started.
func startStack(o upOptions) (*stack, error) {
	if err := checkNATSHost(o.natsHost); err != nil {
		return nil, err
	}
	addrs := o.listenAddrs()
	for _, a := range addrs {
		if err := a.free(); err != nil {
			return nil, err
		}
	}
	s := &stack{}
	if err := s.start(o, addrs); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *stack) start(o upOptions, addrs []listenAddr) error {
	var err error
	if err = os.MkdirAll(o.dataDir, 0o700); err != nil {
		return err
	}
	if s.lock, err = dataLock(o.dataDir); err != nil {
		return err
	}
	if o.services.sealKeyFile == "" {
		o.services.sealKeyFile = filepath.Join(o.dataDir, "seal.key")
	}
	// Operator mode: keys made once in the data directory and kept.
	authDir := filepath.Join(o.dataDir, upAuthDir)
	if _, err = natsauth.Init(authDir, natsauth.InitOptions{ResolverDir: filepath.Join(o.dataDir, "jwt")}); err != nil {
		return err
	}
	natsOpts := bus.EmbeddedOptions{StoreDir: filepath.Join(o.dataDir, "jetstream"), Host: o.natsHost, Port: o.natsPort,
		ConfigFile: filepath.Join(authDir, natsauth.ServerConfFile)}
	if s.nats, err = bus.StartEmbedded(natsOpts); err != nil {
		return addrs[0].err(err)
	}
	s.ssh = sshemu.NewFleet(o.services.log)
	if s.hetzner, err = emulator.Start(emulator.Options{Logger: o.services.log, SSH: s.ssh}, o.hetznerAddr); err != nil {
		return addrs[1].err(err)
	}
	seedHetznerProject(s.hetzner.Emulator())
	if o.services.hetznerEndpoint == "" {
		o.services.hetznerEndpoint = s.hetzner.URL()
	}
	caFile, caKeyFile := filepath.Join(o.dataDir, proxmoxCAFile), filepath.Join(o.dataDir, proxmoxCAKeyFile)
	if s.proxmox, err = startProxmoxEmulator(o.proxmoxAddr, caFile, caKeyFile, s.ssh); err != nil {
		return addrs[2].err(err)
	}
	robotAddr := o.robotAddr
	if robotAddr == "" {
		robotAddr = "127.0.0.1:0"
	}
	if s.robot, err = startRobotEmulator(robotAddr, s.ssh, o.services.log); err != nil {
		return fmt.Errorf("the Hetzner Robot webservice emulator on %s: %w", robotAddr, err)
	}
	if o.services.robotEndpoint == "" {
		o.services.robotEndpoint = s.robot.URL()
	}
	if o.services.snippetsDir == "" {
		o.services.snippetsDir = filepath.Join(o.dataDir, "snippets")
		if err = os.MkdirAll(o.services.snippetsDir, 0o700); err != nil {
			return err
		}
	}
	creds := func(user string) string { return filepath.Join(authDir, natsauth.CredsDir, user+".creds") }
	admin := bus.ConnectOptions{URL: s.nats.ClientURL(), Name: "compute-up", CredsFile: creds(natsauth.UserAdmin)}
	if s.nc, err = connectService(admin); err != nil {
		return err
	}
	o.services.authDir = authDir
	var stops []func()
	s.stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	// Each service as its own user of the SERVICES account, as in compose.
	for _, name := range serviceNames() {
		co := bus.ConnectOptions{URL: s.nats.ClientURL(), Name: "compute-" + name, CredsFile: creds(name),
			InboxPrefix: bus.InboxRoot + "_svc_" + name}
		o.services.conn = co
		nc, err := connectService(co)
		if err != nil {
			return err
		}
		s.conns = append(s.conns, nc)
		var st *bus.Stores
		if !strings.HasPrefix(name, "provider-") { // providers have no JetStream
			if st, err = openStores(nc, 1); err != nil {
				return err
			}
		}
		stop, err := runServices(nc, st, &o.services, []string{name})
		if err != nil {
			return err
		}
		stops = append(stops, stop)
	}
	if s.metrics, err = o.services.serveMetrics(); err != nil {
		return addrs[len(addrs)-1].err(err) // on, so listed last
	}
	s.demoCreds = filepath.Join(o.dataDir, "creds", demoTenant+".creds")
	if err = ensureTenant(s.nc, demoTenant, s.demoCreds); err != nil || o.console.addr == "" {
		return err
	}
	s.console, err = startConsole(o.console, s.nats.ClientURL(), "", o.services.log)
	return err
}

// upAuthDir is the authority directory (natsauth.Init) in the data directory.
const upAuthDir = "nats-auth"

// demoTenant is the tenant `compute up` creates.
const demoTenant = "demo"

// ensureTenant creates tenant through the tenants API on nc (an admin
// connection) unless it exists, and writes a credential of scope
// compute:admin to credsFile unless the file exists. Errors: the tenants
// service's (not ALREADY_EXISTS).
func ensureTenant(nc *nats.Conn, tenant, credsFile string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// get first: a restart finds it, and logs no refused create
	err := bus.Call(ctx, nc, tenants.Subject("get"), api.IDRequest{ID: tenant}, nil)
	if api.IsCode(err, api.CodeNotFound) {
		err = bus.Call(ctx, nc, tenants.Subject("create"), api.TenantCreateRequest{ID: tenant}, nil)
	}
	if err != nil && !api.IsCode(err, api.CodeAlreadyExists) {
		return fmt.Errorf("create tenant %s: %w", tenant, err)
	}
	if _, err := os.Stat(credsFile); err == nil {
		return nil
	}
	var reply api.TenantCredentialsReply
	req := api.TenantCredentialsRequest{ID: tenant, Name: fmt.Sprintf("up-%d", time.Now().UnixNano()),
		Scopes: []string{string(api.ScopeAdmin)}}
	if err := bus.Call(ctx, nc, tenants.Subject("credentials"), req, &reply); err != nil {
		return fmt.Errorf("credential of tenant %s: %w", tenant, err)
	}
	if err := os.MkdirAll(filepath.Dir(credsFile), 0o700); err != nil {
		return err
	}
	return writeCreds(credsFile, reply.Creds)
}

// checkNATSHost refuses a --nats-host other than a loopback address
// (127.0.0.0/8, ::1, localhost): the embedded NATS of `compute up` has no TLS,
// so its traffic (secret values the services resolve, tenants' replies)
// would cross the network in clear; compose has TLS. INVALID_INPUT, details.path "--nats-host".
func checkNATSHost(host string) error {
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return api.Errorf(api.CodeInvalidInput, "--nats-host %q is not a loopback address: the embedded NATS of compute up has no "+
		"TLS; listen on 127.0.0.1 (the default) or ::1, or run the compose stack (TLS) for remote clients", host).
		WithPath("--nats-host")
}

// dataLockFile, in the data directory, is locked (flock) while a `compute
// up` uses the directory.
const dataLockFile = "compute-up.lock"

// dataLock takes the exclusive lock of dir: two stacks on one data
// directory would be two nats-servers writing one JetStream store and two
// reconcilers acting on the same instances (each re-creating what it
// does not find in its own emulators). The lock goes with the process, so
// a killed `compute up` leaves none behind. Errors: dir is in use by
// another `compute up`, or the lock file cannot be opened.
func dataLock(dir string) (*flock.Flock, error) {
	lock := flock.New(filepath.Join(dir, dataLockFile))
	locked, err := lock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if !locked {
		return nil, fmt.Errorf("data directory %s is in use by another `compute up` (--data picks another)", dir)
	}
	return lock, nil
}

// listenAddr is one address `compute up` listens on: what listens there
// and the flag that moves it.
type listenAddr struct{ what, flag, addr string }

// listenAddrs are the addresses `compute up` listens on, each checked free
// before anything starts (the metrics endpoint's last, when it is on: its
// start failure names it by that place).
func (o upOptions) listenAddrs() []listenAddr {
	addrs := []listenAddr{
		{"NATS", "--nats-port", net.JoinHostPort(o.natsHost, strconv.Itoa(o.natsPort))},
		{"Hetzner Cloud API emulator", "--hetzner-addr", o.hetznerAddr},
		{"Proxmox VE API emulator", "--proxmox-addr", o.proxmoxAddr},
	}
	if o.robotAddr != "" {
		addrs = append(addrs, listenAddr{"Hetzner Robot webservice emulator", "--robot-addr", o.robotAddr})
	}
	if o.console.addr != "" {
		addrs = append(addrs, listenAddr{"web console", "--console-addr", o.console.addr})
	}
	if o.services.metricsOn() {
		addrs = append(addrs, listenAddr{"metrics endpoint", "--metrics-addr", o.services.metricsAddr})
	}
	return addrs
}

// free fails (see err) when nothing can listen on a.addr now.
func (a listenAddr) free() error {
	ln, err := net.Listen("tcp", a.addr)
	if err != nil {
		return a.err(err)
	}
	return ln.Close()
}

// err is the one-line error of a failed start of what listens on a: a
// taken port names the port and the flag that picks another.
func (a listenAddr) err(err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		_, port, _ := net.SplitHostPort(a.addr)
		return fmt.Errorf("port %s is in use: is another `compute up` running? (%s; %s picks another)", port, a.what, a.flag)
	}
	return fmt.Errorf("%s on %s: %w", a.what, a.addr, err)
}

// Close stops the console, the metrics endpoint, the services, the
// emulator and NATS, in that order.
func (s *stack) Close() {
	if s.console != nil {
		s.console.Close()
	}
	if s.metrics != nil {
		_ = s.metrics.Close()
	}
	if s.stop != nil {
		s.stop()
	}
	for _, nc := range s.conns {
		nc.Close()
	}
	if s.nc != nil {
		s.nc.Close()
	}
	if s.hetzner != nil {
		_ = s.hetzner.Close()
	}
	if s.proxmox != nil {
		_ = s.proxmox.Close()
	}
	if s.robot != nil {
		_ = s.robot.Close()
	}
	if s.ssh != nil {
		s.ssh.Close()
	}
	if s.nats != nil {
		s.nats.Shutdown()
		s.nats.WaitForShutdown()
	}
	if s.lock != nil {
		_ = s.lock.Unlock()
	}
}

func upCmd(g *globals) *cobra.Command {
	o := upOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run everything on this machine: embedded NATS, every service and the Hetzner Cloud, Proxmox VE and Robot emulators",
		Long: "Starts an embedded nats-server (JetStream data under --data; operator mode with keys made once in\n" +
			"--data/nats-auth, services each as its own user, tenant demo's credential in --data/creds/demo.creds),\n" +
			"the Hetzner Cloud, Proxmox VE and Hetzner Robot API\n" +
			"emulators (provider-hetzner talks to the first: --hetzner-endpoint is ignored; provider-hetzner-robot\n" +
			"to the last), and every service,\n" +
			"all on loopback, then prints how to talk to it. Ctrl-C stops it all. The emulators keep their\n" +
			"machines in memory: after a restart the reconciler finds them gone and creates them again. The\n" +
			"Proxmox emulator's CA stays in --data (proxmox-ca.pem and its key), so pinned accounts keep working.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			o.services.log = g.logger()
			s, err := startStack(o)
			if err != nil {
				return err
			}
			defer s.Close()
			fmt.Fprintf(g.out, upBanner, s.nats.ClientURL(), s.hetzner.URL(), s.proxmox.URL(),
				pveemulator.DefaultTokenID, filepath.Join(o.dataDir, proxmoxCAFile), s.robot.URL(), s.metricsURL(), o.dataDir,
				s.consoleLine(), s.demoCreds,
				filepath.Join(o.dataDir, upAuthDir, natsauth.CredsDir, natsauth.UserAdmin+".creds"),
				s.nats.ClientURL(), s.demoCreds, selfName())
			sig := waitForSignal()
			o.services.log.Info().Str("signal", sig.String()).Msg("stopping")
			return nil
		},
	}
	cmd.Flags().StringVar(&o.dataDir, "data", "./data", "data directory (JetStream store, seal key, Proxmox emulator CA)")
	cmd.Flags().StringVar(&o.natsHost, "nats-host", "127.0.0.1",
		"loopback address the embedded NATS listens on (no TLS: other addresses are refused)")
	cmd.Flags().IntVar(&o.natsPort, "nats-port", 4222, "port the embedded NATS listens on (0: random)")
	cmd.Flags().StringVar(&o.hetznerAddr, "hetzner-addr", "127.0.0.1:4680", "address of the Hetzner Cloud API emulator")
	cmd.Flags().StringVar(&o.proxmoxAddr, "proxmox-addr", "127.0.0.1:8006", "address of the Proxmox VE API emulator")
	cmd.Flags().StringVar(&o.robotAddr, "robot-addr", defaultRobotAddr, "address of the Hetzner Robot webservice emulator")
	serviceFlags(cmd, &o.services)
	metricsFlag(cmd, &o.services, defaultUpMetricsAddr)
	consoleFlags(cmd, &o.console, "127.0.0.1:8480", "address of the web console (empty: none)")
	return cmd
}

// defaultUpMetricsAddr is where `compute up` serves metrics: loopback, on
// a port none of its other listeners (or Prometheus's own 9090) use.
const defaultUpMetricsAddr = "127.0.0.1:9464"

// metricsURL is the banner's metrics line: the scrape URL, or how to
// turn it on.
func (s *stack) metricsURL() string {
	if s.metrics == nil {
		return "off      (--metrics-addr turns it on)"
	}
	return s.metrics.URL() + "   (Prometheus)"
}

// consoleLine is the banner's line of the web console ("" without one).
func (s *stack) consoleLine() string {
	if s.console == nil {
		return ""
	}
	return fmt.Sprintf("  console         %s   (sign in as tenant demo with its credential file)\n", s.console.URL())
}

const upBanner = `
compute is up.
  NATS            %s   (JetStream; operator mode: one account per tenant)
  Hetzner (emu)   %s   (any token)
  Proxmox (emu)   %s   (token id %s, CA in %s)
  Robot (emu)     %s   (any user and password; servers 321, 322 free, 323 taken)
  metrics         %s
  data            %s
  services        accounts, poolctl, provider-hetzner, provider-hetzner-robot, provider-proxmox, reconciler, secrets, tenants
%s  tenant demo     credential %s (scope compute:admin)
  admin           credential %s (operators: compute tenants, secrets rekey)

Talk to it from another terminal (see README.md for the whole walkthrough):
  export COMPUTE_NATS_URL=%s COMPUTE_TENANT=demo COMPUTE_NATS_CREDS=%s
  printf %%s my-hetzner-token | %s secrets put hcloud   # the emulator takes any token
  nats --creds "$COMPUTE_NATS_CREDS" --inbox-prefix _INBOX_demo req compute.v1.demo.instances.list '{}'

Ctrl-C stops everything; state survives in the data directory (the emulators'
machines do not: the reconciler creates them again after a restart).
`

// connectService dials NATS for a service and waits for the connection.
func connectService(o bus.ConnectOptions) (*nats.Conn, error) {
	nc, err := bus.Connect(o)
	if err != nil {
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return nil, fmt.Errorf("NATS at %s: %w", o.URL, err)
	}
	return nc, nil
}

// Names of the network and firewall the Hetzner emulator of compute up
// holds from its start (the user guide's pool network example names
// them): the emulator keeps no state across restarts, so a pool that
// names them works after a restart too.
const (
	upNetwork  = "backend" // 10.0.0.0/16, subnet 10.0.1.0/24 in eu-central (fsn1, nbg1, hel1)
	upFirewall = "db-fw"
)

// seedHetznerProject gives the emulated project of compute up the
// network upNetwork and the firewall upFirewall.
func seedHetznerProject(e *emulator.Emulator) {
	e.AddNetwork(upNetwork, "10.0.0.0/16", "10.0.1.0/24@eu-central")
	e.AddFirewall(upFirewall)
}
