package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
)

// The tables of each record kind. Column names are part of the CLI's
// interface (docs/user-guide.md lists them): add columns, do not rename.
// Cells hold no spaces where a script may split rows (ids, names, sizes,
// prices); only the PROBLEM and DESCRIPTION texts of -o wide do.

var secretView = view[api.Secret]{
	id: func(s *api.Secret) string { return s.ID },
	columns: []column[api.Secret]{
		{name: "NAME", value: func(s *api.Secret) string { return s.Name }},
		{name: "ID", value: func(s *api.Secret) string { return s.ID }},
		{name: "REF", value: func(s *api.Secret) string { return s.Ref }},
		{name: "CREATED", wide: true, value: func(s *api.Secret) string { return timestamp(s.CreatedAt) }},
	},
}

var accountView = view[api.Account]{
	id: func(a *api.Account) string { return a.ID },
	columns: []column[api.Account]{
		{name: "NAME", value: func(a *api.Account) string { return a.Name }},
		{name: "ID", value: func(a *api.Account) string { return a.ID }},
		{name: "PROVIDER", value: func(a *api.Account) string { return a.Provider }},
		{name: "VERSION", value: func(a *api.Account) string { return strconv.FormatInt(a.Version, 10) }},
		{name: "CONFIG", wide: true, value: func(a *api.Account) string { return configText(a.Config) }},
		{name: "CREATED", wide: true, value: func(a *api.Account) string { return timestamp(a.CreatedAt) }},
	},
}

var poolView = view[api.Pool]{
	id: func(p *api.Pool) string { return p.ID },
	columns: []column[api.Pool]{
		{name: "NAME", value: func(p *api.Pool) string { return p.Name }},
		{name: "ID", value: func(p *api.Pool) string { return p.ID }},
		{name: "ACCOUNT", value: func(p *api.Pool) string { return p.ProviderAccountID }},
		{name: "FLAVORS", value: func(p *api.Pool) string { return flavorsText(p.Flavors) }},
		{name: "SIZES", wide: true, value: func(p *api.Pool) string { return sizesText(p.Sizes) }},
		{name: "SITE", wide: true, value: func(p *api.Pool) string { return p.SiteID }},
		{name: "CLASS", wide: true, value: func(p *api.Pool) string { return p.Class }},
		{name: "AGENT", wide: true, value: func(p *api.Pool) string { return p.Agent }},
		{name: "CREATED", wide: true, value: func(p *api.Pool) string { return timestamp(p.CreatedAt) }},
	},
}

var instanceView = view[api.Instance]{
	id: func(i *api.Instance) string { return i.ID },
	columns: []column[api.Instance]{
		{name: "NAME", value: func(i *api.Instance) string { return i.Name }},
		{name: "ID", value: func(i *api.Instance) string { return i.ID }},
		{name: "PHASE", value: func(i *api.Instance) string { return string(i.Status.Phase) }},
		{name: "FLAVOR", value: func(i *api.Instance) string { return i.Flavor }},
		{name: "ADDRESSES", value: func(i *api.Instance) string {
			if m := i.Status.Machine; m != nil {
				return strings.Join(m.Addresses, ",")
			}
			return ""
		}},
		{name: "POOL", wide: true, value: func(i *api.Instance) string { return i.PoolID }},
		{name: "IMAGE", wide: true, value: func(i *api.Instance) string { return i.Image }},
		{name: "POWER", wide: true, value: func(i *api.Instance) string { return string(i.Desired.Power) }},
		{name: "MACHINE", wide: true, value: func(i *api.Instance) string {
			if m := i.Status.Machine; m != nil {
				return m.ID
			}
			return ""
		}},
		{name: "STATE", wide: true, value: func(i *api.Instance) string {
			if m := i.Status.Machine; m != nil {
				return string(m.State)
			}
			return ""
		}},
		{name: "PROBLEM", wide: true, value: func(i *api.Instance) string { return client.Problem(i) }},
		{name: "LABELS", wide: true, value: func(i *api.Instance) string { return labelsText(i.Labels) }},
		{name: "CREATED", wide: true, value: func(i *api.Instance) string { return timestamp(i.CreatedAt) }},
	},
}

// conditionView is the table of an instance's conditions (instances get).
var conditionView = view[api.Condition]{
	id: func(c *api.Condition) string { return string(c.Type) },
	columns: []column[api.Condition]{
		{name: "CONDITION", value: func(c *api.Condition) string { return string(c.Type) }},
		{name: "STATUS", value: func(c *api.Condition) string { return string(c.Status) }},
		{name: "REASON", value: func(c *api.Condition) string { return string(c.Reason) }},
		{name: "SINCE", value: func(c *api.Condition) string { return timestamp(c.LastTransitionTime) }},
		{name: "RETRY", value: func(c *api.Condition) string {
			if c.RetryAt == nil {
				return ""
			}
			return timestamp(*c.RetryAt)
		}},
		{name: "MESSAGE", value: func(c *api.Condition) string { return c.Message }},
	},
}

var offerView = view[api.Offer]{
	id: func(o *api.Offer) string { return o.ID },
	columns: []column[api.Offer]{
		{name: "ID", value: func(o *api.Offer) string { return o.ID }},
		{name: "ARCH", value: func(o *api.Offer) string { return o.Architecture }},
		{name: "VCPU", value: func(o *api.Offer) string { return strconv.Itoa(o.Vcpu) }},
		{name: "MEMORY", value: func(o *api.Offer) string { return gib(o.MemoryGiB) }},
		{name: "DISK", value: func(o *api.Offer) string { return gib(o.DiskGiB) }},
		{name: "PRICE/H", value: func(o *api.Offer) string { return price(o, 1, 4) }},
		{name: "PRICE/MONTH", value: monthly},
		{name: "CURRENCY", value: func(o *api.Offer) string { return o.Currency }},
		{name: "AVAILABLE", value: func(o *api.Offer) string { return yesNo(o.Available) }},
		{name: "REGION", wide: true, value: func(o *api.Offer) string { return o.Region }},
		{name: "KIND", wide: true, value: func(o *api.Offer) string { return o.Kind }},
		{name: "GPUS", wide: true, value: func(o *api.Offer) string { return strconv.Itoa(o.GPUs) }},
		{name: "CAPACITY", wide: true, value: func(o *api.Offer) string { return string(o.CapacityType) }},
		{name: "PRODUCT", wide: true, value: func(o *api.Offer) string { return o.Product }},
		{name: "DATACENTER", wide: true, value: func(o *api.Offer) string { return o.Datacenter }},
	},
}

var providerView = view[api.ProviderInfo]{
	id: func(p *api.ProviderInfo) string { return p.ID },
	columns: []column[api.ProviderInfo]{
		{name: "ID", value: func(p *api.ProviderInfo) string { return p.ID }},
		{name: "VERSION", value: func(p *api.ProviderInfo) string { return p.Version }},
		{name: "CAPABILITIES", value: func(p *api.ProviderInfo) string { return strings.Join(p.Capabilities, ",") }},
		{name: "FIELDS", value: func(p *api.ProviderInfo) string {
			names := make([]string, len(p.Fields))
			for i, f := range p.Fields {
				names[i] = f.Name
			}
			return strings.Join(names, ",")
		}},
	},
}

// fieldView is the table of a provider's config fields (providers
// describe); nested fields are named by their dotted path.
var fieldView = view[api.ManifestField]{
	id: func(f *api.ManifestField) string { return f.Name },
	columns: []column[api.ManifestField]{
		{name: "FIELD", value: func(f *api.ManifestField) string { return f.Name }},
		{name: "TYPE", value: func(f *api.ManifestField) string { return f.Type }},
		{name: "REQUIRED", value: func(f *api.ManifestField) string { return yesNo(f.Required) }},
		{name: "SECRET", value: func(f *api.ManifestField) string { return yesNo(f.Type == "secret") }},
		{name: "DEFAULT", value: func(f *api.ManifestField) string { return valueText(f.Default) }},
		{name: "OPTIONS", value: func(f *api.ManifestField) string { return strings.Join(f.Options, ",") }},
		{name: "DESCRIPTION", wide: true, value: func(f *api.ManifestField) string { return f.Description }},
	},
}

// flatFields lists fields and, after each object or list of objects, its
// members named parent.member (parent[].member for list items).
func flatFields(prefix string, fields []api.ManifestField) []api.ManifestField {
	var out []api.ManifestField
	for _, f := range fields {
		f.Name = prefix + f.Name
		out = append(out, f)
		out = append(out, flatFields(f.Name+".", f.Fields)...)
		if f.Item != nil {
			out = append(out, flatFields(f.Name+"[].", f.Item.Fields)...)
		}
	}
	return out
}

var deletedView = view[api.Deleted]{
	id: func(d *api.Deleted) string { return d.ID },
	columns: []column[api.Deleted]{
		{name: "ID", value: func(d *api.Deleted) string { return d.ID }},
		{name: "DELETED", value: func(d *api.Deleted) string { return yesNo(d.Deleted) }},
	},
}

// timestamp is t in UTC to the second ("" for the zero time).
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// gib is a size in GiB, "4GiB" ("" for 0).
func gib(n float64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatFloat(n, 'f', -1, 64) + "GiB"
}

// price is o's price for hours hours with digits decimals ("" without a
// price).
func price(o *api.Offer, hours float64, digits int) string {
	if o.PricePerHour == nil {
		return ""
	}
	return strconv.FormatFloat(*o.PricePerHour*hours, 'f', digits, 64)
}

// monthly is o's monthly price: the provider's own where it has one,
// else HoursPerMonth × the hourly one ("" without a price).
func monthly(o *api.Offer) string {
	if o.PricePerMonth != nil {
		return strconv.FormatFloat(*o.PricePerMonth, 'f', 2, 64)
	}
	return price(o, api.HoursPerMonth, 2)
}

// flavorsText is "name=offer[:image]" per flavor, comma-separated.
func flavorsText(flavors []api.Flavor) string {
	parts := make([]string, len(flavors))
	for i, f := range flavors {
		parts[i] = f.Name + "=" + f.OfferID
		if f.Image != "" {
			parts[i] += ":" + f.Image
		}
	}
	return strings.Join(parts, ",")
}

// configText is "key=value" per config field in key order (values are
// secret references, never secrets).
func configText(config map[string]any) string {
	parts := make([]string, 0, len(config))
	for _, k := range slices.Sorted(maps.Keys(config)) {
		parts = append(parts, k+"="+valueText(config[k]))
	}
	return strings.Join(parts, ",")
}

// valueText is a config or default value as text: strings as they are,
// anything else as compact JSON ("" for nil).
func valueText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
