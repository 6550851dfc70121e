package emulator

import (
	"fmt"
	"strconv"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// typeByName finds a server type by name. Callers hold e.mu.
func (e *Emulator) typeByName(name string) *serverType {
	for _, t := range e.st.types {
		if t.name == name {
			return t
		}
	}
	return nil
}

// typeByIDOrName finds a server type by id or name. Callers hold e.mu.
func (e *Emulator) typeByIDOrName(ref schema.IDOrName) *serverType {
	for _, t := range e.st.types {
		if (ref.ID != 0 && t.id == ref.ID) || (ref.ID == 0 && ref.Name != "" && t.name == ref.Name) {
			return t
		}
	}
	return nil
}

// locationByName finds a location by name or numeric id. Callers hold e.mu.
func (e *Emulator) locationByName(ref string) *location {
	id, err := strconv.ParseInt(ref, 10, 64)
	for _, l := range e.st.locations {
		if l.Name == ref || (err == nil && l.ID == id) {
			return l
		}
	}
	return nil
}

// imageFor finds an image by id, or by name for the given architecture (the
// real API keeps one image per name and architecture). An empty arch
// matches any. Callers hold e.mu.
func (e *Emulator) imageFor(ref schema.IDOrName, arch string) *image {
	for _, img := range e.st.images {
		if ref.ID != 0 && img.id == ref.ID {
			return img
		}
		if ref.ID == 0 && ref.Name != "" && img.name == ref.Name && (arch == "" || img.architecture == arch) {
			return img
		}
	}
	return nil
}

// typeLocationLocked finds a server type's entry for a location, with an
// error naming what is unknown. Callers hold e.mu.
func (e *Emulator) typeLocationLocked(serverType, loc string) (*serverType, *location, error) {
	t := e.typeByName(serverType)
	if t == nil {
		return nil, nil, fmt.Errorf("server type %q not found", serverType)
	}
	if loc == "" {
		return t, nil, nil
	}
	l := e.locationByName(loc)
	if l == nil {
		return nil, nil, fmt.Errorf("location %q not found", loc)
	}
	return t, l, nil
}

// setAvailability implements SetAvailability and reports unknown names.
func (e *Emulator) setAvailability(serverType, loc string, available bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, l, err := e.typeLocationLocked(serverType, loc)
	if err == nil && l == nil {
		err = fmt.Errorf("location is required")
	}
	if err != nil {
		return err
	}
	t.rendered = nil
	if tl := t.in(l.Name); tl != nil {
		tl.available = available
	} else if available {
		t.locations = append(t.locations, &typeLocation{loc: l, available: true})
	}
	return nil
}

// SetAvailability makes a server type orderable (or sold out) in a location;
// making a type available where it was not offered at all adds the
// location to the type. Unknown names are ignored (and logged).
func (e *Emulator) SetAvailability(serverType, location string, available bool) {
	if err := e.setAvailability(serverType, location, available); err != nil {
		e.log.Warn().Err(err).Msg("emulator: SetAvailability ignored")
	}
}

// deprecationWindow is how long after the announcement a type deprecated
// through the fault API stays orderable, a typical real notice period.
const deprecationWindow = 90 * 24 * time.Hour

// deprecate implements Deprecate and reports unknown names.
func (e *Emulator) deprecate(serverType, loc string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, l, err := e.typeLocationLocked(serverType, loc)
	if err != nil {
		return err
	}
	t.rendered = nil
	now := e.clock.Now().UTC().Truncate(time.Second)
	d := &deprecation{announced: now, unavailableAfter: now.Add(deprecationWindow)}
	if l == nil {
		t.deprecation = d
		for _, tl := range t.locations {
			tl.deprecation = d
		}
		return nil
	}
	tl := t.in(l.Name)
	if tl == nil {
		return fmt.Errorf("server type %q is not offered in %q", serverType, loc)
	}
	tl.deprecation = d
	return nil
}

// Deprecate announces the deprecation of a server type: in one location
// (its locations[].deprecation) or, with location "", everywhere (also the
// type's top-level deprecated/deprecation). The type stays orderable; the
// deprecation is announced now and unavailable_after is 90 days later.
// Unknown names are ignored (and logged).
func (e *Emulator) Deprecate(serverType, location string) {
	if err := e.deprecate(serverType, location); err != nil {
		e.log.Warn().Err(err).Msg("emulator: Deprecate ignored")
	}
}
