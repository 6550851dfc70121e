package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/gofrs/flock"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/services/console"
	"better-compute.io/compute/services/provider-hetzner/emulator"
	pveemulator "better-compute.io/compute/services/provider-proxmox/emulator"
)

// upOptions configures a local stack.
type upOptions struct {
	dataDir     string
	natsHost    string
	natsPort    int
	hetznerAddr string
	proxmoxAddr string
	services    serviceConfig
	console     consoleConfig // console.addr empty: no web console
}

// stack is everything `compute up` runs in one process.
type stack struct {
	nats    *server.Server
	hetzner *emulator.Server
	proxmox *pveemulator.Server
	nc      *nats.Conn
	stop    func()
	console *console.Server // nil without --console-addr
	// lock is held on the data directory while the stack runs (dataLock).
	lock *flock.Flock
}

// startStack starts embedded NATS (JetStream under dataDir), the Hetzner
// Cloud and Proxmox VE API emulators and every service, on loopback. A
// taken address fails before anything starts (see listenAddr.err); any
// other failure stops what had started.
func startStack(o upOptions) (*stack, error) {
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
	natsOpts := bus.EmbeddedOptions{StoreDir: filepath.Join(o.dataDir, "jetstream"), Host: o.natsHost, Port: o.natsPort}
	if s.nats, err = bus.StartEmbedded(natsOpts); err != nil {
		return addrs[0].err(err)
	}
	if s.hetzner, err = emulator.Start(emulator.Options{Logger: o.services.log}, o.hetznerAddr); err != nil {
		return addrs[1].err(err)
	}
	if o.services.hetznerEndpoint == "" {
		o.services.hetznerEndpoint = s.hetzner.URL()
	}
	caFile, caKeyFile := filepath.Join(o.dataDir, proxmoxCAFile), filepath.Join(o.dataDir, proxmoxCAKeyFile)
	if s.proxmox, err = startProxmoxEmulator(o.proxmoxAddr, caFile, caKeyFile); err != nil {
		return addrs[2].err(err)
	}
	if o.services.snippetsDir == "" {
		o.services.snippetsDir = filepath.Join(o.dataDir, "snippets")
		if err = os.MkdirAll(o.services.snippetsDir, 0o700); err != nil {
			return err
		}
	}
	if s.nc, err = connectService(bus.ConnectOptions{URL: s.nats.ClientURL(), Name: "compute-up"}); err != nil {
		return err
	}
	st, err := openStores(s.nc, 1)
	if err != nil {
		return err
	}
	if s.stop, err = runServices(s.nc, st, &o.services, serviceNames()); err != nil || o.console.addr == "" {
		return err
	}
	s.console, err = startConsole(o.console, s.nats.ClientURL(), "", o.services.log)
	return err
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

// listenAddrs are the addresses `compute up` listens on, in start order.
func (o upOptions) listenAddrs() []listenAddr {
	addrs := []listenAddr{
		{"NATS", "--nats-port", net.JoinHostPort(o.natsHost, strconv.Itoa(o.natsPort))},
		{"Hetzner Cloud API emulator", "--hetzner-addr", o.hetznerAddr},
		{"Proxmox VE API emulator", "--proxmox-addr", o.proxmoxAddr},
	}
	if o.console.addr != "" {
		addrs = append(addrs, listenAddr{"web console", "--console-addr", o.console.addr})
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

// Close stops the console, the services, the emulator and NATS, in that order.
func (s *stack) Close() {
	if s.console != nil {
		s.console.Close()
	}
	if s.stop != nil {
		s.stop()
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
		Short: "Run everything on this machine: embedded NATS, every service and the Hetzner Cloud and Proxmox VE emulators",
		Long: "Starts an embedded nats-server (JetStream data under --data), the Hetzner Cloud and Proxmox VE API\n" +
			"emulators (provider-hetzner talks to the first: --hetzner-endpoint is ignored), and every service,\n" +
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
				pveemulator.DefaultTokenID, filepath.Join(o.dataDir, proxmoxCAFile), o.dataDir, s.consoleLine(), s.nats.ClientURL(), selfName())
			sig := waitForSignal()
			o.services.log.Info().Str("signal", sig.String()).Msg("stopping")
			return nil
		},
	}
	cmd.Flags().StringVar(&o.dataDir, "data", "./data", "data directory (JetStream store, seal key, Proxmox emulator CA)")
	cmd.Flags().StringVar(&o.natsHost, "nats-host", "127.0.0.1", "address the embedded NATS listens on")
	cmd.Flags().IntVar(&o.natsPort, "nats-port", 4222, "port the embedded NATS listens on (0: random)")
	cmd.Flags().StringVar(&o.hetznerAddr, "hetzner-addr", "127.0.0.1:4680", "address of the Hetzner Cloud API emulator")
	cmd.Flags().StringVar(&o.proxmoxAddr, "proxmox-addr", "127.0.0.1:8006", "address of the Proxmox VE API emulator")
	serviceFlags(cmd, &o.services)
	consoleFlags(cmd, &o.console, "127.0.0.1:8480", "address of the web console (empty: none)")
	return cmd
}

// consoleLine is the banner's line of the web console ("" without one).
func (s *stack) consoleLine() string {
	if s.console == nil {
		return ""
	}
	return fmt.Sprintf("  console         %s   (web console: sign in with a tenant id, e.g. demo)\n", s.console.URL())
}

const upBanner = `
compute is up.
  NATS            %s   (JetStream; no auth: loopback only)
  Hetzner (emu)   %s   (any token)
  Proxmox (emu)   %s   (token id %s, CA in %s)
  data            %s
  services        accounts, provider-hetzner, provider-proxmox, reconciler, secrets
%s
Talk to it from another terminal (see README.md for the whole walkthrough):
  export COMPUTE_NATS_URL=%s COMPUTE_TENANT=demo
  printf %%s my-hetzner-token | %s secrets put hcloud   # the emulator takes any token
  nats req compute.v1.demo.instances.list '{}'

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
