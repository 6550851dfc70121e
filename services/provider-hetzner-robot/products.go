package robot

import "strings"

// Product is what a dedicated server product offers: CPU threads,
// memory, disks and the monthly price (EUR, gross, without setup fee).
//
// Guess: the webservice's GET /server names only the product; these
// figures are the Robot order pages' at the time of writing and change
// with Hetzner's price list.
type Product struct {
	Threads    int
	MemoryGiB  float64
	Disks      []string // e.g. "2x 512 GB NVMe"
	DiskGiB    float64  // usable with RAID 1
	MonthlyEUR float64
}

// Products by product name (GET /server's product).
var Products = map[string]Product{
	"EX44":  {Threads: 20, MemoryGiB: 64, Disks: []string{"2x 512 GB NVMe"}, DiskGiB: 476, MonthlyEUR: 44},
	"EX101": {Threads: 32, MemoryGiB: 64, Disks: []string{"2x 1.92 TB NVMe"}, DiskGiB: 1788, MonthlyEUR: 84},
	"AX42":  {Threads: 16, MemoryGiB: 64, Disks: []string{"2x 512 GB NVMe"}, DiskGiB: 476, MonthlyEUR: 49},
	"AX52":  {Threads: 16, MemoryGiB: 64, Disks: []string{"2x 1 TB NVMe"}, DiskGiB: 953, MonthlyEUR: 64},
	"AX102": {Threads: 32, MemoryGiB: 128, Disks: []string{"2x 1.92 TB NVMe"}, DiskGiB: 1788, MonthlyEUR: 109},
}

// HoursPerMonth converts monthly prices to hourly ones (the convention
// of the console's costs: 730 hours a month).
const HoursPerMonth = 730

// region is the location of a data centre ("FSN1-DC14" → "fsn1").
func region(dc string) string {
	loc, _, _ := strings.Cut(dc, "-")
	return strings.ToLower(loc)
}
