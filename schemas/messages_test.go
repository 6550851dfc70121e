package schemas

import (
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/natsauth"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/memory"
)

// messages are real messages of each schema: populated pkg/api values as the
// services build them (json.Marshal'ed by the test), and error bodies as
// bus.EncodeError writes them ([]byte, sent as is).
func messages(t testing.TB) map[string][]any {
	raidOne := 1
	now := time.Now().UTC()
	later := now.Add(90 * time.Second)
	const tenant = "acme-1"
	secretID := api.NewID(api.PrefixSecret)
	accountID := api.NewID(api.PrefixAccount)
	poolID := api.NewID(api.PrefixPool)
	instanceID := api.NewID(api.PrefixInstance)
	ref := api.SecretRef{Scheme: api.SchemeSecret, Tenant: tenant, ID: secretID}.String()
	sshKey := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGmQmYu9uQ4HsKQ4pHz4n9sXUSvTVm8Ne0GkZ0aU6p5T alice@example"
	price := 0.0119

	secret := api.Secret{ID: secretID, TenantID: tenant, Name: "hcloud-token", Ref: ref, CreatedAt: now}
	account := api.Account{ID: accountID, TenantID: tenant, Provider: "hetzner-cloud", Name: "main",
		Config:  map[string]any{"token": ref, "location": "fsn1", "labels": map[string]any{"team": "web"}},
		Version: 2, CreatedAt: now, UpdatedAt: later}
	offer := api.Offer{ID: "cx22", Kind: api.KindVPS, Region: "fsn1", Vcpu: 2, MemoryGiB: 4, DiskGiB: 40, Architecture: api.ArchAMD64,
		PricePerHour: &price, Currency: "EUR", Available: true, CapacityType: api.CapacityOnDemand}
	gpuOffer := api.Offer{ID: "pve1-gpu", Kind: api.KindMetal, Region: "pve1", Vcpu: 16, MemoryGiB: 64, GPUs: 2,
		CapacityType: api.CapacitySpot, InterruptionProbability: 0.25}
	flavors := []api.Flavor{{Name: "small", OfferID: "cx22", Image: "ubuntu-24.04"}, {Name: "gpu", OfferID: "pve1-gpu", GrowDisk: true}}
	pool := api.Pool{ID: poolID, TenantID: tenant, Name: "web", SiteID: "fsn", Class: api.PoolClassProvider,
		ProviderAccountID: accountID, Agent: api.PoolAgentNone, Flavors: flavors, Version: 1, CreatedAt: now}
	machine := api.ExternalMachine{ID: "4711", Name: "web-1", State: api.StateRunning, OfferID: "cx22",
		Region: "fsn1", Addresses: []string{"192.0.2.10", "2001:db8::1"}}
	bareMachine := api.ExternalMachine{ID: "100", State: api.StatePending, Addresses: []string{}}
	emulated := api.ExternalMachine{ID: "101", State: api.StateRunning, Addresses: []string{"10.0.1.101"}, SSHEndpoint: "127.0.0.1:40022"}
	exit0 := 0
	tmpl := api.PoolTemplate{Image: "debian-12", Labels: map[string]string{"app": "web"}, UserData: "#cloud-config\n", SSHKeys: []string{sshKey}}
	sizedPool := pool
	sizedPool.Sizes, sizedPool.Template, sizedPool.Revision = map[string]int{"small": 3, "gpu": 0}, &tmpl, 3
	sizedPool.Rollout = &api.PoolRollout{MaxSurge: 1, MaxUnavailable: 0}
	sizedPool.Revisions = []api.PoolRevision{{Revision: 1, Template: tmpl, CreatedAt: now},
		{Revision: 2, Template: api.PoolTemplate{Image: "ubuntu-24.04"}, CreatedAt: later}, {Revision: 3, Template: tmpl, CreatedAt: later, RollbackOf: 1}}
	sizedPool.Status = &api.PoolStatus{ObservedVersion: 3, TargetRevision: 3, CurrentRevision: 2, Replicas: 3, Updated: 1, Ready: 2,
		Flavors: []api.PoolFlavorStatus{{Flavor: "small", Size: 3, Replicas: 3, Updated: 1, Ready: 2}},
		Rollout: api.RolloutProgressing, Message: "revision 3: 1 of 3 updated, 2 ready",
		Conditions: []api.Condition{{Type: api.ConditionAvailable, Status: api.ConditionTrue, Reason: api.ReasonMinimum, LastTransitionTime: now},
			{Type: api.ConditionProgressing, Status: api.ConditionTrue, Reason: api.ReasonNewRevision, LastTransitionTime: now}},
		UpdatedAt: now}
	accessPool := pool
	accessPool.Access = &api.PoolAccess{User: "root", PrivateKey: ref, PublicKey: sshKey, Port: 2222, HostKeyPolicy: api.HostKeyPinFirstContact,
		Configure: &api.AccessStep{Script: "apt-get install -y k3s", TimeoutMs: 600000, OnFailure: api.OnFailureRetry},
		Drain:     &api.AccessStep{Hook: "drain", OnFailure: api.OnFailureContinue}}
	created := api.Instance{ID: instanceID, TenantID: tenant, PoolID: poolID, Flavor: "small", Image: "ubuntu-24.04",
		Name: instanceID, Desired: api.DesiredState{Power: api.PowerOn},
		Status: api.InstanceStatus{Phase: api.PhasePending}, Generation: 1, Version: 1, CreatedAt: now, UpdatedAt: now}
	busy := api.Instance{ID: instanceID, TenantID: tenant, PoolID: poolID, Flavor: "small", Image: "debian-12",
		Name: "web-1", UserData: "#cloud-config\npackages: [nginx]\n", SSHKeys: []string{sshKey},
		Desired: api.DesiredState{Power: api.PowerOff, Operation: &api.Operation{ID: api.NewID(api.PrefixOperation),
			Action: api.ActionReinstall, Image: "debian-12", RequestedAt: now}},
		Status: api.InstanceStatus{Phase: api.PhaseReinstalling, Machine: &machine, ObservedGeneration: 3,
			Conditions: []api.Condition{{Type: api.ConditionProviderError, Status: api.ConditionTrue,
				Reason: api.ReasonOf(api.CodeRateLimited), Message: "provider rate limit", LastTransitionTime: now, RetryAt: &later},
				{Type: api.ConditionReady, Status: api.ConditionFalse, Reason: api.ReasonOf(api.CodeRateLimited), Message: "provider rate limit", LastTransitionTime: now}},
			CreateRequested: true, Retries: 2, Polls: 1,
			LastOperation: &api.OperationStatus{ID: api.NewID(api.PrefixOperation), Action: api.ActionGracefulRestart,
				State: api.OperationSucceeded, Message: "done", StartedAt: now, FinishedAt: &later}},
		Generation: 4, Version: 9, CreatedAt: now, UpdatedAt: later, DeletionRequestedAt: &later}
	configured := created
	configured.Status = api.InstanceStatus{Phase: api.PhaseRunning, Machine: &emulated, ObservedGeneration: 1,
		Conditions: []api.Condition{{Type: api.ConditionConfigured, Status: api.ConditionTrue, Reason: api.ReasonStepSucceeded, LastTransitionTime: now}},
		Access: &api.AccessStatus{HostKey: "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU", HostKeyMachine: "101", HostKeyPinnedAt: &now,
			Configure: &api.StepStatus{Generation: 1, Machine: "101", State: api.StepSucceeded, Attempts: 1, ExitCode: &exit0, Message: "configure exited 0",
				OutputTail: "joined\n", StartedAt: now, FinishedAt: &later},
			Drain: &api.StepStatus{Generation: 1, State: api.StepRunning, Attempts: 2, StartedAt: later}}}
	bootstrapped := configured
	bootstrapped.Bootstrap = &api.BootstrapSpec{ServerNumber: 321, Drives: []string{"/dev/nvme0n1"}, RAIDLevel: &raidOne}
	bootstrapped.Status.Bootstrap = &api.BootstrapStatus{Step: api.BootstrapInstall, State: api.StepRunning, Since: now, Rescues: 1,
		Installs: 2, RescueHostKey: "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU", Message: "installimage runs", OutputTail: "x"}
	pacct := api.ProviderAccount{ID: accountID, TenantID: tenant, Version: 2, Config: account.Config}
	query := api.OfferQuery{Region: "fsn1", Kind: api.KindVPS, MinVcpu: 2, MinMemoryGiB: 3.5, GPUs: 1}
	spec := api.MachineSpec{Name: "web-1", OfferID: "cx22", Image: "ubuntu-24.04", Region: "fsn1",
		UserData: "#cloud-config\n", SSHKeys: []string{sshKey}}

	accountKey, _ := natsauth.NewAccountKey()
	userKey, _ := nkeys.CreateUser()
	userPub, _ := userKey.PublicKey()
	credential := api.TenantCredential{ID: userPub, Name: "ci", Scopes: []api.Scope{api.ScopeInstancesRead}, CreatedAt: now}
	revokedCred := credential
	revokedCred.RevokedAt = &later
	tenantRec := api.Tenant{ID: tenant, Account: accountKey, State: api.TenantActive, Limits: api.DefaultTenantLimits,
		Credentials: []api.TenantCredential{credential}, CreatedAt: now, Version: 2}
	revokedTenant := tenantRec
	revokedTenant.State, revokedTenant.RevokedAt = api.TenantRevoked, &later
	revokedTenant.Credentials = []api.TenantCredential{revokedCred}
	revokedTenant.Quotas = api.TenantQuotas{Instances: 100, CreatesPerSecond: 5}
	window := api.MetricsWindow{Type: api.MetricsCPU, From: now.Add(-time.Hour), To: now, Step: 60}
	metrics := api.Metrics{Type: api.MetricsNetwork, From: now.Add(-time.Hour), To: now, Step: 60, Series: []api.MetricSeries{
		{Name: "network.0.bandwidth.in", Unit: "bytes/s", Points: []api.MetricPoint{{Time: now.Add(-time.Minute), Value: 1024.5}}},
		{Name: "network.0.bandwidth.out", Unit: "bytes/s", Points: []api.MetricPoint{}}}}
	resized := configured
	resized.Flavor = "large"
	resized.Status.Flavor = "small"
	resized.Status.Resize = &api.ResizeStatus{Flavor: "large", FromFlavor: "small", OfferID: "cx33", Generation: 2,
		State: api.ResizeFailed, Code: api.CodeInvalidInput, Path: "flavor", Message: "smaller disk", Rebooted: true,
		StartedAt: now, FinishedAt: &later}
	return map[string][]any{
		"provider.resize.request.json": {api.ProviderResizeRequest{Account: pacct, ID: "4711", OfferID: "cx33"},
			api.ProviderResizeRequest{Account: pacct, ID: "4711", IdempotencyKey: instanceID, OfferID: "cx33", DiskGrow: true, Power: api.PowerOff}},
		"resize-result.json": {api.ResizeResult{Machine: &machine, Changed: true, Rebooted: true}, api.ResizeResult{Machine: &bareMachine}},
		"provider.metrics.request.json": {api.ProviderMetricsRequest{Account: pacct, ID: "4711", MetricsWindow: window},
			api.ProviderMetricsRequest{Account: pacct, ID: "4711", IdempotencyKey: instanceID,
				MetricsWindow: api.MetricsWindow{Type: api.MetricsDisk, From: now.Add(-time.Hour), To: now}}},
		"instances.metrics.request.json": {api.InstanceMetricsRequest{ID: instanceID, MetricsWindow: window},
			api.InstanceMetricsRequest{TenantID: tenant, ID: instanceID, MetricsWindow: api.MetricsWindow{Type: api.MetricsNetwork, From: now.Add(-24 * time.Hour), To: now}}},
		"metrics.json":           {metrics, api.Metrics{Type: api.MetricsCPU, From: now.Add(-time.Hour), To: now, Step: 18, Series: []api.MetricSeries{}}},
		"tenant.json":            {tenantRec, revokedTenant},
		"tenant-credential.json": {credential, revokedCred},
		"tenant-list.json":       {api.List[api.Tenant]{Items: []api.Tenant{tenantRec}, NextCursor: tenant}},
		"tenants.create.request.json": {api.TenantCreateRequest{ID: tenant},
			api.TenantCreateRequest{ID: tenant, Limits: &api.TenantLimits{Connections: -1, Subscriptions: 10, PayloadBytes: 4096},
				Quotas: &api.TenantQuotas{ConcurrentLists: 2}}},
		"tenants.credentials.request.json": {api.TenantCredentialsRequest{ID: tenant, Name: "ci", Scopes: []string{"compute:admin"}}},
		"tenants.credentials.reply.json":   {api.TenantCredentialsReply{Credential: credential, Creds: "-----BEGIN NATS USER JWT-----\n…"}},
		"tenants.revoke.request.json":      {api.TenantRevokeRequest{ID: tenant}, api.TenantRevokeRequest{ID: tenant, Credential: userPub}},
		"secrets.put.request.json": {api.SecretPutRequest{Name: "hcloud-token", Value: "not-a-real-token"},
			api.SecretPutRequest{TenantID: tenant, Name: "pve.root_pw-2", Value: "x", IdempotencyKey: "put-1"}},
		"secret.json":       {secret},
		"secret-list.json":  {api.List[api.Secret]{Items: []api.Secret{secret}, NextCursor: secretID}, api.List[api.Secret]{Items: []api.Secret{}}},
		"id.request.json":   {api.IDRequest{ID: instanceID}, api.IDRequest{TenantID: tenant, ID: secretID}},
		"list.request.json": {api.ListRequest{}, api.ListRequest{TenantID: tenant, Limit: 1000, Cursor: poolID}},
		"deleted.json":      {api.Deleted{ID: poolID, Deleted: true}},
		"accounts.create.request.json": {api.AccountCreateRequest{Provider: "hetzner-cloud", Name: "main", Config: map[string]any{"token": ref}},
			api.AccountCreateRequest{TenantID: tenant, Provider: "memory", Name: "m"}},
		"accounts.update.request.json": {api.AccountUpdateRequest{ID: accountID, Version: 1, Name: "renamed"},
			api.AccountUpdateRequest{TenantID: tenant, ID: accountID, Version: 3, Config: map[string]any{"token": "env://HCLOUD_TOKEN"}}},
		"accounts.offers.request.json": {api.AccountOffersRequest{ID: accountID}, api.AccountOffersRequest{TenantID: tenant, ID: accountID, Query: query}},
		"account.json":                 {account},
		"account-list.json":            {api.List[api.Account]{Items: []api.Account{account}}},
		"offer.json":                   {offer, gpuOffer},
		"offer-list.json":              {api.List[api.Offer]{Items: []api.Offer{offer, gpuOffer}}, api.List[api.Offer]{Items: []api.Offer{}}},
		"pools.create.request.json": {api.PoolCreateRequest{Class: api.PoolClassProvider, ProviderAccountID: accountID, Agent: api.PoolAgentNone,
			Flavors: flavors[:1]}, api.PoolCreateRequest{TenantID: tenant, Name: "web", SiteID: "fsn", Class: api.PoolClassProvider,
			ProviderAccountID: accountID, Agent: api.PoolAgentNone, Flavors: flavors},
			api.PoolCreateRequest{Class: api.PoolClassProvider, ProviderAccountID: accountID, Agent: api.PoolAgentNone,
				Flavors: flavors[:1], Access: accessPool.Access}},
		"pool.json": {pool, accessPool, sizedPool},
		"pools.update.request.json": {api.PoolUpdateRequest{ID: poolID, Sizes: map[string]int{"small": 3}},
			api.PoolUpdateRequest{TenantID: tenant, ID: poolID, Version: 2, Template: &tmpl,
				Rollout: &api.PoolRollout{MaxSurge: 0, MaxUnavailable: 1}}},
		"pools.rollback.request.json": {api.PoolRollbackRequest{ID: poolID},
			api.PoolRollbackRequest{TenantID: tenant, ID: poolID, Version: 4, Revision: 1}},
		"pool-list.json": {api.List[api.Pool]{Items: []api.Pool{pool}, NextCursor: poolID}},
		"instances.create.request.json": {api.InstanceCreateRequest{PoolID: poolID, Flavor: "small"},
			api.InstanceCreateRequest{TenantID: tenant, PoolID: poolID, Flavor: "gpu", Image: "debian-12", Name: "gpu-1.lab",
				UserData: "#cloud-config\n", SSHKeys: []string{sshKey}, Power: api.PowerOff, IdempotencyKey: "create-7"}},
		"instances.list.request.json": {api.InstanceListRequest{},
			api.InstanceListRequest{ListRequest: api.ListRequest{TenantID: tenant, Limit: 10, Cursor: instanceID}, PoolID: poolID, Phase: api.PhaseRunning}},
		"instances.power.request.json":     powerRequests(tenant, instanceID),
		"instances.reinstall.request.json": {api.InstanceReinstallRequest{TenantID: tenant, ID: instanceID, Image: "debian-12"}},
		"instances.update.request.json": {api.InstanceUpdateRequest{TenantID: tenant, ID: instanceID, Flavor: "large"},
			api.InstanceUpdateRequest{ID: instanceID, Version: 3, Labels: map[string]string{"team": "web", "example.com/tier": ""}}},
		"instance.json":      {created, busy, configured, resized, bootstrapped},
		"instance-list.json": {api.List[api.Instance]{Items: []api.Instance{created, busy}}},
		"event.json": {api.Event{ID: api.NewID(api.PrefixEvent), TenantID: tenant, Resource: bus.ResourceInstances, ResourceID: instanceID,
			Type: "created", Phase: api.PhasePending, Generation: 1, Time: now},
			api.Event{ID: api.NewID(api.PrefixEvent), TenantID: tenant, Resource: bus.ResourceInstances, ResourceID: instanceID,
				Type: "drift", Message: "machine 4711 missing", Time: later}},
		"error.json":                   errorBodies(),
		"provider.describe.reply.json": {memory.Definition(memory.NewCloud()).Describe(), bareDescription(t)},
		"provider.offers.request.json": {api.ProviderOffersRequest{Account: pacct}, api.ProviderOffersRequest{Account: pacct, Query: query}},
		"provider.create.request.json": {api.ProviderCreateRequest{Account: pacct, IdempotencyKey: instanceID, Machine: spec},
			api.ProviderCreateRequest{Account: api.ProviderAccount{ID: accountID, TenantID: tenant}, IdempotencyKey: "k",
				Machine: api.MachineSpec{Name: "a", OfferID: "o", Image: "i"}}},
		"machine.json":                    {machine, bareMachine, emulated},
		"provider.get.reply.json":         {api.ProviderGetReply{Machine: &machine}, api.ProviderGetReply{}},
		"provider.machine.request.json":   {api.ProviderMachineRequest{Account: pacct, ID: "4711"}, api.ProviderMachineRequest{Account: pacct, IdempotencyKey: instanceID}},
		"provider.power.request.json":     {api.ProviderPowerRequest{Account: pacct, ID: "4711", Action: api.ActionGracefulOff}},
		"provider.reinstall.request.json": {api.ProviderReinstallRequest{Account: pacct, ID: "4711", Image: "debian-12"}},
		"provider.relabel.request.json": {api.ProviderRelabelRequest{Account: pacct, ID: "4711", Labels: map[string]string{"env": "prod"}},
			api.ProviderRelabelRequest{Account: pacct, ID: "4711", Labels: map[string]string{}, IdempotencyKey: instanceID}},
		"provider.list.request.json": {api.ProviderListRequest{Account: pacct}, api.ProviderListRequest{Account: pacct, Limit: 500, Cursor: "4711"}},
		"provider.checkpool.request.json": {api.ProviderPoolCheckRequest{Account: pacct}, api.ProviderPoolCheckRequest{Account: pacct,
			Network: &api.PoolNetwork{Bridge: "vmbr1", VLAN: 42, Addresses: &api.AddressRange{CIDR: "192.168.10.0/24",
				Gateway: "192.168.10.1", DNS: []string{"192.168.10.2"}, First: "192.168.10.10", Last: "192.168.10.200"}},
			Placement: &api.PoolPlacement{Nodes: []string{"pve1", "pve2"}},
			Flavors:   []api.Flavor{{Name: "small", OfferID: "small", Image: "ubuntu-24-04", Storage: "ceph-vm"}}},
			api.ProviderPoolCheckRequest{Account: pacct, Flavors: []api.Flavor{{Name: "small", OfferID: "cx23"}},
				Network: &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "backend", IPRange: "10.0.1.0/24"}},
					Firewalls: []string{"web"}, PublicIPv4: new(bool)},
				Placement: &api.PoolPlacement{Spread: true, Locations: []string{"fsn1", "nbg1"}}}},
		"machine-list.json": {api.List[api.ExternalMachine]{Items: []api.ExternalMachine{machine, bareMachine}, NextCursor: "100"}},
		"secrets.resolve.request.json": {api.SecretResolveRequest{TenantID: tenant, Ref: ref},
			api.SecretResolveRequest{TenantID: tenant, Ref: "vault://kv/hetzner/prod#token"}},
		"secrets.resolve.reply.json": {api.SecretResolveReply{Value: "not-a-real-token"}},
		"empty.json":                 {api.Empty{}},
		"instances.exec.request.json": {api.InstanceExecRequest{ID: instanceID, Command: "uptime"},
			api.InstanceExecRequest{TenantID: tenant, ID: instanceID, Command: "systemctl status k3s", TimeoutMs: 5000}},
		"exec-result.json": {api.InstanceExecReply{Stdout: "up 3 days\n"},
			api.InstanceExecReply{ExitCode: -1, Stderr: "warn\n", Truncated: true, TimedOut: true}},
		"instances.logs.request.json": {api.InstanceLogsRequest{ID: instanceID, Source: api.LogSourceJournal},
			api.InstanceLogsRequest{TenantID: tenant, ID: instanceID, Source: api.LogSourceCloudInit, Lines: 20}},
		"log.json": {api.InstanceLogsReply{Source: api.LogSourceConsole, Lines: []string{}},
			api.InstanceLogsReply{Source: api.LogSourceJournal, Lines: []string{"a", "b"}, Truncated: true}},
		"provider.json": {api.ProviderInfo{ID: "hetzner-cloud", Version: "1.2.0", Capabilities: []string{"power", "reinstall"},
			Fields: []api.ManifestField{{Name: "token", Type: "secret", Required: true}, {Name: "location", Type: "option", Options: []string{"fsn1"}, Default: "fsn1"}}},
			api.ProviderInfo{ID: "bare", Version: "0.1.0"}},
		"provider-list.json": {api.List[api.ProviderInfo]{Items: []api.ProviderInfo{{ID: "bare", Version: "0.1.0"}}}, api.List[api.ProviderInfo]{Items: []api.ProviderInfo{}}},
		"accounts.bootstrap.request.json": {api.AccountBootstrapRequest{AccountID: accountID, PoolID: poolID, ServerNumber: 321,
			Image: "/root/.oldroot/nfs/images/Ubuntu-2404-noble-amd64-base.tar.gz"},
			api.AccountBootstrapRequest{TenantID: tenant, AccountID: accountID, PoolID: poolID, ServerNumber: 7, Image: "https://img.example/u.tar.zst",
				Hostname: "bm-7", Drives: []string{"/dev/nvme0n1", "/dev/nvme1n1"}, RAIDLevel: &raidOne, Flavor: "metal", IdempotencyKey: "k"}},
	}
}

// powerRequests is one instances.power request per power action.
func powerRequests(tenant, id string) []any {
	var out []any
	for _, a := range api.PowerActions() {
		out = append(out, api.InstancePowerRequest{TenantID: tenant, ID: id, Action: a})
	}
	return out
}

// errorBodies is one error body per code, built with the constructor the
// services use for it.
func errorBodies() []any {
	var out []any
	for _, code := range api.Codes() {
		var e *api.ComputeError
		switch code {
		case api.CodeInvalidInput:
			e = api.InvalidInput("flavors[0].offerId", "offer %q is not an offer of the account", "cx99")
		case api.CodeInvalidConfig:
			e = api.InvalidConfig("config.token", "config.token is required")
		case api.CodeNotFound:
			e = api.NotFound("pool", api.NewID(api.PrefixPool))
		case api.CodeRateLimited:
			e = api.RateLimited(1500*time.Millisecond, "slow down")
			e.Details.NotExecuted = true
		case api.CodeProviderError:
			e = api.ProviderError(422, "uniqueness_error", "server name is already used")
		default:
			e = api.Errorf(code, "%s happened", code)
		}
		_, _, body := bus.EncodeError(e)
		out = append(out, body)
	}
	return out
}

// bareDescription describes a provider with every manifest field type and
// no capabilities (capabilities null on the wire).
func bareDescription(t testing.TB) api.ProviderDescription {
	lo, hi := int64(1), int64(16)
	d, err := provider.Define(provider.Definition{ID: "bare-metal-2", Version: "0.3.1-rc.1+build.5", Provides: []string{api.KindMetal, api.KindVPS},
		Manifest: []api.ManifestField{
			{Name: "endpoint", Type: provider.TypeString, Required: true, Description: "API URL"},
			{Name: "password", Type: provider.TypeSecret, Required: true},
			{Name: "mode", Type: provider.TypeOption, Options: []string{"fast", "safe"}, Default: "safe"},
			{Name: "cores", Type: provider.TypeInt, Min: &lo, Max: &hi, Default: 2},
			{Name: "insecure", Type: provider.TypeBool},
			{Name: "nodes", Type: provider.TypeList, Item: &api.ManifestField{Name: "node", Type: provider.TypeString}},
			{Name: "network", Type: provider.TypeObject, Fields: []api.ManifestField{{Name: "bridge", Type: provider.TypeString, Default: "vmbr0"}}},
		},
		New: func(provider.BuildContext) (provider.Client, error) { return nil, nil },
	})
	require.NoError(t, err)
	return d.Describe()
}
