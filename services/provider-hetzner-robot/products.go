package robot

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/syself/hrobot-go/models"

	"better-compute.io/compute/pkg/api"
)

// productReply is GET /order/server/product/{id}: the product's
// description lines (CPU, memory, disks, … as the order page lists them)
// and its monthly price per location (decimal strings, EUR).
type productReply struct {
	Product struct {
		ID          string   `json:"id"`
		Name        string   `json:"name"`
		Description []string `json:"description"`
		Prices      []struct {
			Location string `json:"location"`
			Price    struct {
				Net   string `json:"net"`
				Gross string `json:"gross"`
			} `json:"price"`
		} `json:"prices"`
	} `json:"product"`
}

// Product is a dedicated server product as offers report it: its CPU
// model and threads, memory, disks (description lines) and the disk
// space a RAID 1 over its first disk line leaves, and its gross monthly
// price by location ("FSN1"; absent where it is not sold).
type Product struct {
	CPU        string
	Threads    int
	MemoryGiB  float64
	Disks      []string
	DiskGiB    float64
	MonthlyEUR map[string]float64
}

var (
	memoryLine = regexp.MustCompile(`^(\d+) GB .*(DDR|RAM)`)
	diskLine   = regexp.MustCompile(`^(\d+) x ([\d.,]+) (GB|TB) .*(SSD|HDD|NVMe|SATA)`)
)

// CPUThreads is the hardware threads of the CPU models the products name
// (the description names the model only). Guess: from the vendors' spec
// sheets; a model absent here counts as 1 thread (vcpu is at least 1).
var CPUThreads = map[string]int{
	"i5-13500": 20, "i9-13900": 32, "i7-6700": 8, "i7-8700": 12, "i9-9900K": 16,
	"Ryzen™ 7 PRO 8700GE": 16, "Ryzen™ 7 7700": 16, "Ryzen™ 9 7950X3D": 32, "Ryzen™ 5 3600": 12, "Ryzen™ 9 5950X": 32,
}

// parseProduct reads what an offer needs from a product reply: the CPU
// (the first description line), memory and disks (the lines that read
// as such), the usable disk space (the first disk line's size: RAID 1 of
// its disks), and the gross monthly prices.
func parseProduct(r *productReply) Product {
	p := Product{Threads: 1, MonthlyEUR: map[string]float64{}}
	for i, line := range r.Product.Description {
		switch {
		case i == 0:
			p.CPU = line
			for model, n := range CPUThreads {
				if strings.Contains(line, model) {
					p.Threads = n
				}
			}
		case memoryLine.MatchString(line):
			n, _ := strconv.Atoi(memoryLine.FindStringSubmatch(line)[1])
			p.MemoryGiB = float64(n)
		case diskLine.MatchString(line):
			p.Disks = append(p.Disks, line)
			if len(p.Disks) == 1 {
				p.DiskGiB = diskGiB(diskLine.FindStringSubmatch(line))
			}
		}
	}
	for _, pr := range r.Product.Prices {
		if v, err := strconv.ParseFloat(pr.Price.Gross, 64); err == nil {
			p.MonthlyEUR[pr.Location] = v
		}
	}
	return p
}

// diskGiB is one disk's size of a disk line's match in GiB (vendors'
// decimal GB and TB; "1.92" or "1,92").
func diskGiB(m []string) float64 {
	size, err := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", "."), 64)
	if err != nil {
		return 0
	}
	bytes := size * 1e9
	if m[3] == "TB" {
		bytes = size * 1e12
	}
	return float64(int(bytes/(1<<30)*10)) / 10 // to 0.1 GiB, down
}

// products reads the product of every server in servers once (GET
// /order/server/product/{id}); a product the order endpoint does not know
// (no longer sold: 404 NOT_FOUND) is absent from the answer.
func (s *session) products(servers []models.Server) (map[string]Product, error) {
	out := map[string]Product{}
	seen := map[string]bool{}
	for _, srv := range servers {
		if seen[srv.Product] || !free(&srv) {
			continue
		}
		seen[srv.Product] = true
		var r productReply
		err := s.getJSON("/order/server/product/"+srv.Product, &r)
		switch {
		case isCode(err, models.ErrorCodeNotFound):
			continue
		case err != nil:
			return nil, err
		}
		out[srv.Product] = parseProduct(&r)
	}
	return out, nil
}

// region is the location of a data centre ("FSN1-DC14" → "fsn1").
func region(dc string) string {
	loc, _, _ := strings.Cut(dc, "-")
	return strings.ToLower(loc)
}

// offer is the offer id of free server srv of product p (known: whether
// the order endpoint described it): its number, or its product (any free
// server of it; Guess: the region and data centre are the first one's).
// The price is the product's gross monthly price in the server's
// location; per hour it is that / api.HoursPerMonth. An unknown product
// has 1 vcpu, 1 GiB of memory (the least an offer may have) and no price.
func offer(id string, srv *models.Server, p Product, known bool) api.Offer {
	o := api.Offer{ID: id, Kind: api.KindMetal, Region: region(srv.Dc), Vcpu: p.Threads, MemoryGiB: p.MemoryGiB,
		DiskGiB: p.DiskGiB, Architecture: api.ArchAMD64, Currency: "EUR", Available: srv.Status == "ready",
		CapacityType: api.CapacityOnDemand, Product: srv.Product, CPU: p.CPU, Disks: p.Disks, Datacenter: srv.Dc}
	if !known {
		o.Vcpu, o.MemoryGiB = 1, 1
	}
	loc, _, _ := strings.Cut(srv.Dc, "-")
	if monthly, ok := p.MonthlyEUR[strings.ToUpper(loc)]; ok {
		hourly := monthly / api.HoursPerMonth
		o.PricePerMonth, o.PricePerHour = &monthly, &hourly
	}
	return o
}
