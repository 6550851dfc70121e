package emulator

import (
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func TestErrorStyles(t *testing.T) {
	for _, tc := range []struct {
		legacy  bool
		version string
	}{{false, "8.3.0"}, {true, "8.2.4"}} {
		s := startServer(t, Options{LegacyErrors: tc.legacy})
		x := newTester(t, s)
		equal(t, x.do(http.MethodGet, "/version", nil).dataMap(t)["version"], tc.version, "version")
		r := x.do(http.MethodGet, "/nodes/pve1/qemu/404/config", nil)
		msg := "Configuration file 'nodes/pve1/qemu-server/404.conf' does not exist"
		equal(t, r.status, 500, "status")
		equal(t, r.reason, msg, "reason phrase")
		if tc.legacy {
			equal(t, r.raw, `{"data":null}`, "legacy body")
		} else {
			equal(t, r.body["message"], msg+"\n", "modern message")
			equal(t, r.body["data"], nil, "modern data")
		}
	}
}

func TestRouteFaultStyleOverride(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	s.Emulator().InjectRouteFault(RouteFault{Route: RouteVersion, Message: "boom", Style: StyleLegacy})
	r := x.do(http.MethodGet, "/version", nil)
	equal(t, r.reason, "boom", "reason")
	equal(t, r.raw, `{"data":null}`, "legacy body despite modern emulator")
}

func TestAuthentication(t *testing.T) {
	s := startServer(t, Options{Tokens: map[string]string{"ci@pve!deploy": "s3cret"}})
	x := newTester(t, s)
	for _, tc := range []struct{ header, reason string }{
		{"", "No ticket"},
		{"Bearer x", "No ticket"},
		{"PVEAPIToken=ci@pve!deploy=wrong", "invalid token value!"},
		{"PVEAPIToken=ci@pve!other=s3cret", "no such token 'other' for user 'ci@pve'"},
		{"PVEAPIToken=garbage", "invalid token value!"},
	} {
		x.auth = tc.header
		r := x.do(http.MethodGet, "/version", nil)
		equal(t, r.status, 401, "status for "+tc.header)
		equal(t, r.reason, tc.reason, "reason for "+tc.header)
		equal(t, r.raw, `{"data":null}`, "body for "+tc.header)
	}
	x.auth = "PVEAPIToken=ci@pve!deploy=s3cret"
	equal(t, x.do(http.MethodGet, "/version", nil).status, 200, "good token")
}

func TestTLSNeedsThePinnedCA(t *testing.T) {
	s := startServer(t, Options{})
	_, err := (&http.Client{Timeout: 5 * time.Second}).Get(s.URL() + "/version") //nolint:bodyclose // must fail: no body
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("unpinned client: err = %v, want an unknown-authority error", err)
	}
	// The pinned client works for 127.0.0.1 (and the leaf is signed by the CA).
	x := newTester(t, s)
	equal(t, x.do(http.MethodGet, "/version", nil).status, 200, "pinned client")
	other := startServer(t, Options{})
	y := newTester(t, other)
	y.client = pinnedClient(t, s)                   // the wrong CA
	_, err = y.client.Get(other.URL() + "/version") //nolint:bodyclose // must fail: no body
	if !errors.As(err, &unknown) {
		t.Fatalf("client pinned to another CA: err = %v", err)
	}
}

func TestNextID(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	equal(t, x.do(http.MethodGet, "/cluster/nextid", nil).data(), "100", "nextid")
	equal(t, x.do(http.MethodGet, "/cluster/nextid", url.Values{"vmid": {"500"}}).data(), "500", "free vmid")
	r := x.do(http.MethodGet, "/cluster/nextid", url.Values{"vmid": {"9000"}})
	equal(t, r.status, 400, "taken vmid status")
	equal(t, r.body["errors"], map[string]any{"vmid": "VM 9000 already exists"}, "taken vmid errors")
	r = x.do(http.MethodGet, "/cluster/nextid", url.Values{"vmid": {"42"}})
	equal(t, r.body["errors"], map[string]any{"vmid": "value must have a minimum value of 100"}, "low vmid")
}

func TestNodesAndRouting(t *testing.T) {
	s := startServer(t, Options{Nodes: []Node{{Name: "pve1"}, {Name: "pve2", CPUs: 8, MemoryBytes: 16 << 30}}})
	x := newTester(t, s)
	nodes := x.do(http.MethodGet, "/nodes", nil).data().([]any)
	mustEqual(t, len(nodes), 2, "nodes")
	equal(t, nodes[1].(map[string]any)["maxcpu"], float64(8), "pve2 cpus")

	isErrorReply(t, x.do(http.MethodGet, "/nodes/pve9/qemu", nil), 500,
		"hostname lookup 'pve9' failed - failed to get address info for: pve9: Name or service not known")
	isErrorReply(t, x.do(http.MethodGet, "/nodes/pve1/nonsense", nil), 501, "Method 'GET /nodes/pve1/nonsense' not implemented")

	noErr(t, s.Emulator().SetNodeOnline("pve1", false))
	isErrorReply(t, x.do(http.MethodGet, "/nodes/pve1/status", nil), 595, "No route to host")
	res := x.do(http.MethodGet, "/cluster/resources", url.Values{"type": {"vm"}}).data().([]any)
	equal(t, res[0].(map[string]any)["status"], "unknown", "guest on an offline node")
	equal(t, x.do(http.MethodGet, "/nodes", nil).data().([]any)[0].(map[string]any)["status"], "offline", "offline node")
	noErr(t, s.Emulator().SetNodeOnline("pve1", true))

	noErr(t, s.Emulator().SetNodeMemory("pve1", 64<<30))
	st := x.do(http.MethodGet, "/nodes/pve1/status", nil).dataMap(t)
	equal(t, st["memory"].(map[string]any)["total"], float64(64<<30), "node memory")
	equal(t, st["cpuinfo"].(map[string]any)["cpus"], float64(DefaultNodeCPUs), "node cpus")

	r := x.do(http.MethodGet, "/cluster/resources", url.Values{"type": {"bogus"}})
	equal(t, r.status, 400, "bad resource type")
	storages := x.do(http.MethodGet, "/nodes/pve1/storage", nil).data().([]any)
	equal(t, len(storages), 2, "storages")
	equal(t, x.do(http.MethodGet, "/nodes/pve1/storage/local-lvm/status", nil).dataMap(t)["used"], float64(10<<30), "local-lvm used by the template")
}

func TestConfigUpdates(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	x.clone(101, "web-1")
	path := "/nodes/pve1/qemu/101/config"

	cfg := x.config(101)
	equal(t, cfg["memory"], "2048", "memory is a string")
	equal(t, cfg["cores"], float64(2), "cores is a number")

	// JSON bodies work like forms.
	r := x.doJSON(http.MethodPut, path, map[string]any{"cores": 4, "memory": 8192, "onboot": true, "tags": []string{"B", "a"}})
	equal(t, r.status, 200, "JSON PUT")
	cfg = x.config(101)
	equal(t, cfg["cores"], float64(4), "cores")
	equal(t, cfg["memory"], "8192", "memory")
	equal(t, cfg["onboot"], float64(1), "onboot")
	equal(t, cfg["tags"], "a;b", "tags")

	// Description is trimmed; delete removes keys.
	x.do(http.MethodPut, path, url.Values{"description": {"line one\nline two\n\n"}, "delete": {"cicustom,ipconfig0"}})
	cfg = x.config(101)
	equal(t, cfg["description"], "line one\nline two", "description")
	equal(t, cfg["cicustom"], nil, "cicustom deleted")
	equal(t, cfg["ipconfig0"], nil, "ipconfig0 deleted")

	// A new disk is allocated from "storage:GiB".
	x.do(http.MethodPut, path, url.Values{"scsi1": {"local-lvm:5,iothread=1"}})
	equal(t, x.config(101)["scsi1"], "local-lvm:vm-101-disk-1,iothread=1,size=5G", "allocated disk")

	// Stale digest.
	isErrorReply(t, x.do(http.MethodPut, path, url.Values{"cores": {"1"}, "digest": {"0000"}}), 500,
		"detected modified configuration - file changed by other user? Try again.")
	digest := x.config(101)["digest"].(string)
	equal(t, x.do(http.MethodPut, path, url.Values{"cores": {"1"}, "digest": {digest}}).status, 200, "matching digest")

	// Schema errors are one 400 naming every bad parameter.
	r = x.do(http.MethodPut, path, url.Values{"cores": {"many"}, "bogus": {"1"}, "name": {"no_underscores"}})
	equal(t, r.status, 400, "status")
	equal(t, r.body["errors"], map[string]any{
		"cores": "type check ('integer') failed - got 'many'",
		"bogus": "property is not defined in schema and the schema does not allow additional properties",
		"name":  "invalid format - value does not look like a valid DNS name",
	}, "errors")
}
