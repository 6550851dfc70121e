package proxmox

import (
	"crypto/sha256"
	"encoding/binary"
)

// MaxProbes is how many VMID slots a create probes for its key: the
// key's slot and the next ones (wrapping inside the range).
const MaxProbes = 64

// keySlot is the VMID an idempotency key hashes to: vmidMin plus the first
// 8 bytes of the key's SHA-256 (big-endian) modulo the range's size.
func keySlot(key string, lo, hi int) int {
	sum := sha256.Sum256([]byte(key))
	return lo + int(binary.BigEndian.Uint64(sum[:8])%uint64(hi-lo+1))
}

// probeSlots are the VMIDs a create for key tries, in order: the key's
// slot and the following ones, wrapping from hi to lo, at most MaxProbes
// and never one twice.
func probeSlots(key string, lo, hi int) []int {
	n := min(MaxProbes, hi-lo+1)
	first := keySlot(key, lo, hi)
	out := make([]int, n)
	for i := range out {
		out[i] = lo + (first-lo+i)%(hi-lo+1)
	}
	return out
}
