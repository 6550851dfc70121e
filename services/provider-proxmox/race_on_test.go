//go:build race

package proxmox

// raceBuild reports whether the test binary has the race detector.
const raceBuild = true
