package proxmox

import "better-compute.io/compute/pkg/provider"

// vmName turns a machine name into a PVE VM name, a DNS label (see
// provider.HostnameLabel); a name without letters or digits becomes "vm".
func vmName(name string) string {
	return provider.HostnameLabel(name, "vm")
}
