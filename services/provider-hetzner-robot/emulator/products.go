package emulator

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
)

// Product is one dedicated server product as the order endpoints
// describe it (GET /order/server/product/{id}): its name, its
// description lines (CPU, memory, disks, … as the order page lists them),
// its traffic, and its monthly price per location (net, EUR, without VAT;
// gross adds VAT at VATRate).
type Product struct {
	ID          string
	Name        string
	Description []string
	Traffic     string
	// MonthlyNet is the monthly price by location ("FSN1", "NBG1", "HEL1").
	MonthlyNet map[string]float64
}

// VATRate is the VAT the emulator adds to net prices for gross ones.
// Guess: a German customer's 19 %; the real API uses the account's VAT.
const VATRate = 0.19

// Products are the products the emulator's order endpoints list, the
// products of AddServer's servers. Guess: the description lines and
// prices are the order pages' at the time of writing; they change with
// Hetzner's price list.
var Products = map[string]Product{
	"EX44": {ID: "EX44", Name: "Dedicated Server EX44", Traffic: "unlimited",
		Description: []string{"Intel® Core™ i5-13500", "64 GB DDR4", "2 x 512 GB NVMe SSD", "1 GBit/s-Port"},
		MonthlyNet:  map[string]float64{"FSN1": 44, "NBG1": 44, "HEL1": 44}},
	"EX101": {ID: "EX101", Name: "Dedicated Server EX101", Traffic: "unlimited",
		Description: []string{"Intel® Core™ i9-13900", "64 GB DDR5 ECC", "2 x 1.92 TB NVMe SSD Datacenter Edition", "1 GBit/s-Port"},
		MonthlyNet:  map[string]float64{"FSN1": 84, "NBG1": 84}},
	"AX42": {ID: "AX42", Name: "Dedicated Server AX42", Traffic: "unlimited",
		Description: []string{"AMD Ryzen™ 7 PRO 8700GE", "64 GB DDR5 ECC", "2 x 512 GB NVMe SSD", "1 GBit/s-Port"},
		MonthlyNet:  map[string]float64{"FSN1": 49, "NBG1": 49, "HEL1": 49}},
	"AX52": {ID: "AX52", Name: "Dedicated Server AX52", Traffic: "unlimited",
		Description: []string{"AMD Ryzen™ 7 7700", "64 GB DDR5", "2 x 1 TB NVMe SSD", "1 GBit/s-Port"},
		MonthlyNet:  map[string]float64{"FSN1": 64, "NBG1": 64, "HEL1": 64}},
	"AX102": {ID: "AX102", Name: "Dedicated Server AX102", Traffic: "unlimited",
		Description: []string{"AMD Ryzen™ 9 7950X3D", "128 GB DDR5 ECC", "2 x 1.92 TB NVMe SSD Datacenter Edition", "1 GBit/s-Port"},
		MonthlyNet:  map[string]float64{"FSN1": 109, "NBG1": 109}},
}

// money is a price as the webservice writes it: a decimal string with
// four places ("44.0000").
func money(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// productJSON is the shape of GET /order/server/product/{id}: prices one
// entry per location, in the order of the product's locations.
func productJSON(p Product) map[string]any {
	locations := []string{}
	for _, l := range []string{"FSN1", "NBG1", "HEL1"} {
		if _, ok := p.MonthlyNet[l]; ok {
			locations = append(locations, l)
		}
	}
	prices := []any{}
	for _, l := range locations {
		net := p.MonthlyNet[l]
		prices = append(prices, map[string]any{"location": l,
			"price":       map[string]string{"net": money(net), "gross": money(net * (1 + VATRate))},
			"price_setup": map[string]string{"net": money(0), "gross": money(0)}})
	}
	return map[string]any{"product": map[string]any{"id": p.ID, "name": p.Name, "description": p.Description,
		"traffic": p.Traffic, "dist": []string{"Rescue system", "Ubuntu 24.04 LTS base"}, "arch": []int{64},
		"lang": []string{"en"}, "location": locations, "prices": prices, "orderable_addons": []any{}}}
}

// listProducts is GET /order/server/product: every product, by id.
func (e *Emulator) listProducts(*http.Request, []string) reply {
	out := []any{}
	for _, id := range slices.Sorted(maps.Keys(Products)) {
		out = append(out, productJSON(Products[id]))
	}
	return ok(out)
}

// getProduct is GET /order/server/product/{id}: 404 NOT_FOUND for a
// product that is not (or no longer) orderable (Guess: the docs name
// NOT_FOUND for the product list's endpoints).
func (e *Emulator) getProduct(_ *http.Request, p []string) reply {
	prod, found := Products[p[3]]
	if !found {
		return fail(http.StatusNotFound, "NOT_FOUND", "product not found")
	}
	return ok(productJSON(prod))
}
