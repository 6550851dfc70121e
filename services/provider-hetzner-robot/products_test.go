package robot

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestParseProduct maps order-endpoint product replies to what offers
// report: the CPU and its threads, memory, disks (the first disk line's
// size, RAID 1), and the gross monthly price per location.
func TestParseProduct(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		want        Product
	}{
		{"EX44", `{"product":{"id":"EX44","description":["Intel® Core™ i5-13500","64 GB DDR4","2 x 512 GB NVMe SSD","1 GBit/s-Port"],
			"prices":[{"location":"FSN1","price":{"net":"44.0000","gross":"52.3600"}}]}}`,
			Product{CPU: "Intel® Core™ i5-13500", Threads: 20, MemoryGiB: 64, Disks: []string{"2 x 512 GB NVMe SSD"}, DiskGiB: 476.8,
				MonthlyEUR: map[string]float64{"FSN1": 52.36}}},
		{"two disk lines, comma decimals", `{"product":{"description":["AMD Ryzen™ 9 7950X3D","128 GB DDR5 ECC RAM",
			"2 x 1,92 TB NVMe SSD Datacenter Edition","2 x 16 TB SATA HDD"],
			"prices":[{"location":"FSN1","price":{"net":"109.0000","gross":"129.7100"}},{"location":"NBG1","price":{"net":"109.0000","gross":"x"}}]}}`,
			Product{CPU: "AMD Ryzen™ 9 7950X3D", Threads: 32, MemoryGiB: 128, DiskGiB: 1788.1,
				Disks:      []string{"2 x 1,92 TB NVMe SSD Datacenter Edition", "2 x 16 TB SATA HDD"},
				MonthlyEUR: map[string]float64{"FSN1": 129.71}}},
		{"unknown CPU, no disks, no prices", `{"product":{"description":["Some CPU 9000","32 GB RAM"],"prices":[]}}`,
			Product{CPU: "Some CPU 9000", Threads: 1, MemoryGiB: 32, MonthlyEUR: map[string]float64{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r productReply
			if err := json.Unmarshal([]byte(tc.reply), &r); err != nil {
				t.Fatal(err)
			}
			got := parseProduct(&r)
			same := got.CPU == tc.want.CPU && got.Threads == tc.want.Threads && got.MemoryGiB == tc.want.MemoryGiB &&
				got.DiskGiB == tc.want.DiskGiB && slices.Equal(got.Disks, tc.want.Disks) && len(got.MonthlyEUR) == len(tc.want.MonthlyEUR)
			for l, v := range tc.want.MonthlyEUR {
				same = same && got.MonthlyEUR[l] == v
			}
			if !same {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
