package bus

import "better-compute.io/compute/pkg/api"

// The tables of OpenStores' buckets and who owns them: the owner writes
// through the Table, every other service reads through its Reader.
//
//	bucket               records (key)                                     owner
//	compute_secrets      sealed secrets (<tenant>.<secretId>),             secrets
//	                     key checks (_keycheck.<keyId>)
//	compute_accounts     provider accounts (<tenant>.<accountId>)          accounts
//	compute_pools        pools (<tenant>.<poolId>)                         accounts
//	compute_instances    instances (<tenant>.<instanceId>)                 reconciler
//	compute_idempotency  create results (<tenant>.<op>.<sha256 of key>)    the service of op:
//	                     (IdempotencyID)                                   secrets-put: secrets,
//	                                                                       instances-create: reconciler
//	compute_poolctl      pool controller records (<tenant>.<poolId>)       poolctl
//	compute_usage        instance counts under quotas (<tenant>.instances) reconciler
//	compute_tenants      tenant records (_tenants.<tenantId>)              tenants (read by every
//	                                                                       service: Quotas)
//
// Readers: the reconciler reads pools and accounts, accounts reads
// instances (a pool in use is not deleted), secrets reads accounts and pools
// (a referenced secret is not deleted), accounts reads the pool controller's
// records (a sized pool's status in pools.get).

// InstanceTable is compute_instances (owner: the reconciler), records named
// "instance" in errors. A create keeps GrowthRoom for the status the
// reconciler writes later.
func (st *Stores) InstanceTable() *Table[api.Instance] {
	t := NewTable[api.Instance](st.Instances, "instance")
	t.room = GrowthRoom
	return t
}

// PoolTable is compute_pools (owner: accounts), records named "pool".
func (st *Stores) PoolTable() *Table[api.Pool] { return NewTable[api.Pool](st.Pools, "pool") }

// AccountTable is compute_accounts (owner: accounts), records named "account".
func (st *Stores) AccountTable() *Table[api.Account] {
	return NewTable[api.Account](st.Accounts, "account")
}

// PoolControlTable is compute_poolctl (owner: poolctl), records named
// "pool control".
func (st *Stores) PoolControlTable() *Table[api.PoolControl] {
	return NewTable[api.PoolControl](st.PoolControl, "pool control")
}
