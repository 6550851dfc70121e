// Package api holds the wire types shared by every service on the bus: the
// records of DESIGN.md (secrets, provider accounts, pools, instances, offers,
// external machines), the requests and replies of every public and internal
// subject, and ComputeError, the one error shape every reply uses.
//
// All JSON is camelCase. Sizes are GiB, prices EUR per hour unless Currency says
// otherwise, durations milliseconds, times RFC 3339 in UTC.
package api
