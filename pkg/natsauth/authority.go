package natsauth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// Files of an authority directory (Init writes them, Load reads them).
const (
	// OperatorJWTFile, SysJWTFile and ServicesJWTFile hold the operator's and
	// the two fixed accounts' JWTs (public; ServerConf inlines them).
	OperatorJWTFile = "operator.jwt"
	SysJWTFile      = "sys.jwt"
	ServicesJWTFile = "services.jwt"
	// OperatorSigningKeyFile is the seed of the operator's signing key,
	// which signs every account JWT; IssuerKeyFile the seed of the key every
	// account lists as its signing key, which signs every user JWT. Both are
	// secret (mode 0600, under keys/): the tenants service reads them.
	OperatorSigningKeyFile = "keys/operator-signing.nk"
	IssuerKeyFile          = "keys/issuer.nk"
	// ServerConfFile is the nats-server configuration include (ServerConf).
	ServerConfFile = "nats-auth.conf"
	// CredsDir holds one <user>.creds per user of the SERVICES account.
	CredsDir = "creds"
	// EnvDir holds the same credentials as environment files, <user>.env
	// (EnvJWT and EnvSeed; for the tenants user also EnvSigningKey and
	// EnvIssuerKey), for containers that cannot read the host's files
	// (compose's env_file).
	EnvDir = "env"
)

// Environment variables of EnvDir's files.
const (
	EnvJWT        = "COMPUTE_NATS_JWT"
	EnvSeed       = "COMPUTE_NATS_SEED"
	EnvSigningKey = "COMPUTE_NATS_OPERATOR_SIGNING_KEY"
	EnvIssuerKey  = "COMPUTE_NATS_ISSUER_KEY"
)

// Account names in their JWTs.
const (
	AccountSys      = "SYS"
	AccountServices = "SERVICES"
)

// Authority is the operator's keys and the fixed accounts' public keys: what
// signs account and user JWTs. Its seeds never leave it but as the files Init
// writes.
type Authority struct {
	// Operator, Sys and Services are public keys (O…, A…, A…).
	Operator, Sys, Services string
	signing, issuer         nkeys.KeyPair
}

// InitOptions configures Init.
type InitOptions struct {
	// ResolverDir is the directory of nats-server's full account resolver
	// (the account JWTs it keeps); ServerConf names it. Required.
	ResolverDir string
}

// Init makes dir an authority directory, or brings an existing one up to
// date: the first run generates the operator, its signing key, the issuer
// key and the SYS and SERVICES accounts; every run keeps those keys, signs
// the account JWTs afresh (the SERVICES exports follow api.Verbs), mints
// the credentials of the admin user and every service user
// (creds/<user>.creds, mode 0600) and writes ServerConfFile. Errors: an
// unwritable or corrupt directory.
func Init(dir string, o InitOptions) (*Authority, error) {
	if o.ResolverDir == "" {
		return nil, errors.New("nats auth: a resolver directory is required")
	}
	// dir itself is readable: nats-server (another user in a container)
	// reads ServerConfFile; the secret parts are in directories of mode 0700.
	for d, mode := range map[string]os.FileMode{dir: 0o755, filepath.Join(dir, "keys"): 0o700,
		filepath.Join(dir, CredsDir): 0o700, filepath.Join(dir, EnvDir): 0o700} {
		if err := os.MkdirAll(d, mode); err != nil {
			return nil, fmt.Errorf("nats auth: %w", err)
		}
		if err := os.Chmod(d, mode); err != nil {
			return nil, fmt.Errorf("nats auth: %w", err)
		}
	}
	a, err := Load(dir)
	if errors.Is(err, os.ErrNotExist) {
		a, err = create(dir)
	}
	if err != nil {
		return nil, err
	}
	sysJWT, err := a.sign(a.sysClaims())
	if err != nil {
		return nil, err
	}
	servicesJWT, err := a.sign(a.servicesClaims())
	if err != nil {
		return nil, err
	}
	if err := writeFiles(dir, map[string]string{SysJWTFile: sysJWT, ServicesJWTFile: servicesJWT}, 0o644); err != nil {
		return nil, err
	}
	creds := map[string]string{}
	for _, name := range append(Services(), UserAdmin) {
		perms, _ := ServicePermissions(name) // the admin's are empty: everything
		c, _, err := a.User(a.Services, name, perms)
		if err != nil {
			return nil, err
		}
		creds[filepath.Join(CredsDir, name+".creds")] = string(c)
		env, err := envFile(c)
		if err != nil {
			return nil, err
		}
		if name == UserTenants {
			signing, _ := a.signing.Seed()
			issuer, _ := a.issuer.Seed()
			env += EnvSigningKey + "=" + string(signing) + "\n" + EnvIssuerKey + "=" + string(issuer) + "\n"
		}
		creds[filepath.Join(EnvDir, name+".env")] = env
	}
	if err := writeFiles(dir, creds, 0o600); err != nil {
		return nil, err
	}
	opJWT, err := os.ReadFile(filepath.Join(dir, OperatorJWTFile))
	if err != nil {
		return nil, fmt.Errorf("nats auth: %w", err)
	}
	conf := ServerConf(string(opJWT), a.Sys, o.ResolverDir, map[string]string{a.Sys: sysJWT, a.Services: servicesJWT})
	return a, writeFiles(dir, map[string]string{ServerConfFile: conf}, 0o644)
}

// envFile is creds as the lines EnvJWT=… and EnvSeed=… of an environment file.
func envFile(creds []byte) (string, error) {
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return "", err
	}
	kp, err := nkeys.ParseDecoratedNKey(creds)
	if err != nil {
		return "", err
	}
	seed, _ := kp.Seed()
	return EnvJWT + "=" + token + "\n" + EnvSeed + "=" + string(seed) + "\n", nil
}

// create generates the keys and the operator JWT of a new authority in dir.
func create(dir string) (*Authority, error) {
	op, err := nkeys.CreateOperator()
	if err != nil {
		return nil, err
	}
	signing, _ := nkeys.CreateOperator()
	issuer, _ := nkeys.CreateAccount()
	sys, _ := nkeys.CreateAccount()
	services, _ := nkeys.CreateAccount()
	a := &Authority{signing: signing, issuer: issuer}
	a.Operator, _ = op.PublicKey()
	a.Sys, _ = sys.PublicKey()
	a.Services, _ = services.PublicKey()
	signingPub, _ := signing.PublicKey()
	oc := jwt.NewOperatorClaims(a.Operator)
	oc.Name = "compute"
	oc.SigningKeys.Add(signingPub)
	oc.SystemAccount = a.Sys
	opJWT, err := oc.Encode(op)
	if err != nil {
		return nil, fmt.Errorf("nats auth: operator JWT: %w", err)
	}
	// The account identities' seeds are not kept: every account lists the
	// issuer as its signing key, and the operator signing key signs them.
	sysJWT, err := a.sign(a.sysClaims())
	if err != nil {
		return nil, err
	}
	servicesJWT, err := a.sign(a.servicesClaims())
	if err != nil {
		return nil, err
	}
	signingSeed, _ := signing.Seed()
	issuerSeed, _ := issuer.Seed()
	seeds := map[string]string{OperatorSigningKeyFile: string(signingSeed), IssuerKeyFile: string(issuerSeed)}
	if err := writeFiles(dir, seeds, 0o600); err != nil {
		return nil, err
	}
	return a, writeFiles(dir, map[string]string{OperatorJWTFile: opJWT, SysJWTFile: sysJWT, ServicesJWTFile: servicesJWT}, 0o644)
}

// Load reads the authority of dir (Init made it). Errors: os.ErrNotExist
// when dir holds none; a file that is not what Init wrote.
func Load(dir string) (*Authority, error) {
	signing, err := os.ReadFile(filepath.Join(dir, OperatorSigningKeyFile))
	if err != nil {
		return nil, fmt.Errorf("nats auth: %w", err)
	}
	issuer, err := os.ReadFile(filepath.Join(dir, IssuerKeyFile))
	if err != nil {
		return nil, fmt.Errorf("nats auth: %w", err)
	}
	return LoadKeys(dir, signing, issuer)
}

// LoadKeys is Load with the two seeds given (e.g. from EnvSigningKey and
// EnvIssuerKey) instead of read from dir/keys. Errors: a seed that is not
// of its kind (never quoted); Load's.
func LoadKeys(dir string, signingSeed, issuerSeed []byte) (*Authority, error) {
	a := &Authority{}
	var err error
	if a.signing, err = parseSeed("the operator signing key", signingSeed, nkeys.PrefixByteOperator); err != nil {
		return nil, err
	}
	if a.issuer, err = parseSeed("the issuer key", issuerSeed, nkeys.PrefixByteAccount); err != nil {
		return nil, err
	}
	for file, pub := range map[string]*string{OperatorJWTFile: &a.Operator, SysJWTFile: &a.Sys, ServicesJWTFile: &a.Services} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return nil, fmt.Errorf("nats auth: %w", err)
		}
		c, err := jwt.Decode(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("nats auth: %s: %w", file, err)
		}
		*pub = c.Claims().Subject
	}
	return a, nil
}

// parseSeed reads the nkey seed what, of the given kind. The error never
// holds the seed.
func parseSeed(what string, seed []byte, kind nkeys.PrefixByte) (nkeys.KeyPair, error) {
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
	if err != nil {
		return nil, fmt.Errorf("nats auth: %s is not an nkey seed", what)
	}
	if pub, _ := kp.PublicKey(); !nkeys.IsValidPublicKey(pub) || nkeys.Prefix(pub) != kind {
		return nil, fmt.Errorf("nats auth: %s is not the seed of an %s key", what, kind)
	}
	return kp, nil
}

// writeFiles writes each file (path relative to dir) atomically with mode.
func writeFiles(dir string, files map[string]string, mode os.FileMode) error {
	for name, content := range files {
		path := filepath.Join(dir, name)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), mode); err != nil {
			return fmt.Errorf("nats auth: %w", err)
		}
		if err := os.Chmod(tmp, mode); err != nil { // whatever the umask
			return fmt.Errorf("nats auth: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("nats auth: %w", err)
		}
	}
	return nil
}

// sign signs account claims with the operator's signing key, after listing
// the issuer as the account's signing key.
func (a *Authority) sign(ac *jwt.AccountClaims) (string, error) {
	issuerPub, _ := a.issuer.PublicKey()
	ac.SigningKeys.Add(issuerPub)
	s, err := ac.Encode(a.signing)
	if err != nil {
		return "", fmt.Errorf("nats auth: account %s: %w", ac.Name, err)
	}
	return s, nil
}

func (a *Authority) sysClaims() *jwt.AccountClaims {
	ac := jwt.NewAccountClaims(a.Sys)
	ac.Name = AccountSys
	return ac
}

// servicesClaims: JetStream without limits (the services' buckets and
// streams), every public verb exported as a service and the events as a
// stream.
func (a *Authority) servicesClaims() *jwt.AccountClaims {
	ac := jwt.NewAccountClaims(a.Services)
	ac.Name = AccountServices
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit,
		Streams: jwt.NoLimit, Consumer: jwt.NoLimit, MaxAckPending: jwt.NoLimit, MemoryMaxStreamBytes: jwt.NoLimit,
		DiskMaxStreamBytes: jwt.NoLimit}
	for _, v := range api.Verbs {
		ac.Exports.Add(&jwt.Export{Name: v.Resource + "." + v.Verb, Subject: jwt.Subject(bus.Command("*", v.Resource, v.Verb)),
			Type: jwt.Service})
	}
	ac.Exports.Add(&jwt.Export{Name: "events", Subject: jwt.Subject(bus.EventsOf("*")), Type: jwt.Stream})
	return ac
}

// User mints a user of account (a public key) called name with perms,
// signed by the issuer: its credentials file (JWT and seed, the format of
// nats.UserCredentials) and its public key.
func (a *Authority) User(account, name string, perms jwt.Permissions) (creds []byte, pub string, err error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, "", err
	}
	pub, _ = kp.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = name
	uc.IssuerAccount = account
	uc.Permissions = perms
	token, err := uc.Encode(a.issuer)
	if err != nil {
		return nil, "", fmt.Errorf("nats auth: user %s: %w", name, err)
	}
	seed, _ := kp.Seed()
	creds, err = jwt.FormatUserConfig(token, seed)
	return creds, pub, err
}

// ServerConf is the nats-server configuration include of operator mode:
// the operator JWT, the system account, the full resolver keeping account
// JWTs in resolverDir (accounts pushed at runtime take effect at once and
// are replicated to every node of a cluster), and preloaded account JWTs
// (public key → JWT).
func ServerConf(operatorJWT, sys, resolverDir string, preload map[string]string) string {
	var b strings.Builder
	b.WriteString("# Generated by `compute nats-init` (pkg/natsauth): operator mode. Do not edit;\n")
	b.WriteString("# run it again instead. Every value here is public (no seed).\n")
	fmt.Fprintf(&b, "operator: %q\nsystem_account: %q\n", strings.TrimSpace(operatorJWT), sys)
	fmt.Fprintf(&b, "resolver: {\n  type: full\n  dir: %q\n  allow_delete: false\n  interval: \"2m\"\n  timeout: \"5s\"\n}\n", resolverDir)
	b.WriteString("resolver_preload: {\n")
	keys := make([]string, 0, len(preload))
	for k := range preload {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %q\n", k, preload[k])
	}
	b.WriteString("}\n")
	return b.String()
}
