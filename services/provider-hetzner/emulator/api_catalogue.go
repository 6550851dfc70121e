package emulator

import (
	"net/http"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// parseID parses a path id; ok is false for anything but a positive integer.
func parseID(raw string) (int64, bool) {
	id, err := strconv.ParseInt(raw, 10, 64)
	return id, err == nil && id > 0
}

// listServerTypes serves GET /server_types (filter: name).
func (e *Emulator) listServerTypes(r *http.Request, _ string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := r.URL.Query()
	var matched []*serverType
	for _, t := range e.st.types {
		if name := q.Get("name"); name == "" || t.name == name {
			matched = append(matched, t)
		}
	}
	out, m := pageOf(matched, q, (*serverType).toSchema)
	return ok(struct {
		ServerTypes []schema.ServerType `json:"server_types"`
		Meta        meta                `json:"meta"`
	}{out, m})
}

// getServerType serves GET /server_types/{id}.
//
// Guess: a non-numeric id is simply not found (as for every {id} route).
func (e *Emulator) getServerType(_ *http.Request, raw string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id, valid := parseID(raw); valid {
		if t := e.typeByIDOrName(schema.IDOrName{ID: id}); t != nil {
			return ok(schema.ServerTypeGetResponse{ServerType: t.toSchema()})
		}
	}
	return notFound("server type")
}

// listLocations serves GET /locations (filter: name).
func (e *Emulator) listLocations(r *http.Request, _ string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := r.URL.Query()
	var matched []*location
	for _, l := range e.st.locations {
		if name := q.Get("name"); name == "" || l.Name == name {
			matched = append(matched, l)
		}
	}
	out, m := pageOf(matched, q, func(l *location) schema.Location { return l.Location })
	return ok(struct {
		Locations []schema.Location `json:"locations"`
		Meta      meta              `json:"meta"`
	}{out, m})
}

// getLocation serves GET /locations/{id}.
func (e *Emulator) getLocation(_ *http.Request, raw string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id, valid := parseID(raw); valid {
		for _, l := range e.st.locations {
			if l.ID == id {
				return ok(schema.LocationGetResponse{Location: l.Location})
			}
		}
	}
	return notFound("location")
}

// listImages serves GET /images (filters: name, architecture, type).
func (e *Emulator) listImages(r *http.Request, _ string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := r.URL.Query()
	var matched []*image
	for _, img := range e.st.images {
		if (q.Get("name") == "" || img.name == q.Get("name")) &&
			(q.Get("architecture") == "" || img.architecture == q.Get("architecture")) &&
			(q.Get("type") == "" || q.Get("type") == "system") {
			matched = append(matched, img)
		}
	}
	out, m := pageOf(matched, q, (*image).toSchema)
	return ok(struct {
		Images []schema.Image `json:"images"`
		Meta   meta           `json:"meta"`
	}{out, m})
}

// getImage serves GET /images/{id}.
func (e *Emulator) getImage(_ *http.Request, raw string) reply {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id, valid := parseID(raw); valid {
		if img := e.imageFor(schema.IDOrName{ID: id}, ""); img != nil {
			return ok(schema.ImageGetResponse{Image: img.toSchema()})
		}
	}
	return notFound("image")
}

// datacentersGone serves /datacenters and /datacenters/{id}, removed from
// the API on 2026-10-01.
func datacentersGone(*Emulator, *http.Request, string) reply {
	return errorReply(http.StatusGone, "deprecated_api_endpoint",
		"the datacenters endpoint was removed; use server_types[].locations instead",
		schema.ErrorDetailsDeprecatedAPIEndpoint{
			Announcement: "https://docs.hetzner.cloud/changelog#2026-06-02-datacenters-deprecated",
		})
}
