// Package provider is the provider contract: a Definition (id, version, what
// it provides, a config manifest, capabilities, a constructor), the Client
// interfaces a provider implements, the Call context every call gets, config
// validation against a manifest, and Serve, which turns a Definition into a
// bus service on compute.internal.provider.<id>.<verb>. Remote is the client
// side of those subjects.
package provider
