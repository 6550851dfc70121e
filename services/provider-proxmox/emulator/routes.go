package emulator

// Route keys: an API call's method and path pattern below /api2/json. They
// name routes for call counting (Calls), route faults and latency.
const (
	// RouteVersion is GET /version.
	RouteVersion = "GET /version"
	// RouteClusterResources is GET /cluster/resources.
	RouteClusterResources = "GET /cluster/resources"
	// RouteNextID is GET /cluster/nextid.
	RouteNextID = "GET /cluster/nextid"
	// RouteNodes is GET /nodes.
	RouteNodes = "GET /nodes"
	// RouteNodeStatus is GET /nodes/{node}/status.
	RouteNodeStatus = "GET /nodes/{node}/status"
	// RouteStorageList is GET /nodes/{node}/storage.
	RouteStorageList = "GET /nodes/{node}/storage"
	// RouteStorageStatus is GET /nodes/{node}/storage/{storage}/status.
	RouteStorageStatus = "GET /nodes/{node}/storage/{storage}/status"
	// RouteQemuList is GET /nodes/{node}/qemu.
	RouteQemuList = "GET /nodes/{node}/qemu"
	// RouteClone is POST /nodes/{node}/qemu/{vmid}/clone.
	RouteClone = "POST /nodes/{node}/qemu/{vmid}/clone"
	// RouteConfigGet is GET /nodes/{node}/qemu/{vmid}/config.
	RouteConfigGet = "GET /nodes/{node}/qemu/{vmid}/config"
	// RouteConfigPost is POST /nodes/{node}/qemu/{vmid}/config (async).
	RouteConfigPost = "POST /nodes/{node}/qemu/{vmid}/config"
	// RouteConfigPut is PUT /nodes/{node}/qemu/{vmid}/config (sync).
	RouteConfigPut = "PUT /nodes/{node}/qemu/{vmid}/config"
	// RouteResize is PUT /nodes/{node}/qemu/{vmid}/resize.
	RouteResize = "PUT /nodes/{node}/qemu/{vmid}/resize"
	// RouteStatusCurrent is GET /nodes/{node}/qemu/{vmid}/status/current.
	RouteStatusCurrent = "GET /nodes/{node}/qemu/{vmid}/status/current"
	// RouteStart is POST /nodes/{node}/qemu/{vmid}/status/start.
	RouteStart = "POST /nodes/{node}/qemu/{vmid}/status/start"
	// RouteStop is POST /nodes/{node}/qemu/{vmid}/status/stop.
	RouteStop = "POST /nodes/{node}/qemu/{vmid}/status/stop"
	// RouteShutdown is POST /nodes/{node}/qemu/{vmid}/status/shutdown.
	RouteShutdown = "POST /nodes/{node}/qemu/{vmid}/status/shutdown"
	// RouteReset is POST /nodes/{node}/qemu/{vmid}/status/reset.
	RouteReset = "POST /nodes/{node}/qemu/{vmid}/status/reset"
	// RouteReboot is POST /nodes/{node}/qemu/{vmid}/status/reboot.
	RouteReboot = "POST /nodes/{node}/qemu/{vmid}/status/reboot"
	// RouteDestroy is DELETE /nodes/{node}/qemu/{vmid}.
	RouteDestroy = "DELETE /nodes/{node}/qemu/{vmid}"
	// RouteNodeTasks is GET /nodes/{node}/tasks (the node's task list).
	RouteNodeTasks = "GET /nodes/{node}/tasks"
	// RouteTaskStatus is GET /nodes/{node}/tasks/{upid}/status.
	RouteTaskStatus = "GET /nodes/{node}/tasks/{upid}/status"
	// RouteAgentInterfaces is
	// GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces.
	RouteAgentInterfaces = "GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"
	// RoutePending is GET /nodes/{node}/qemu/{vmid}/pending.
	RoutePending = "GET /nodes/{node}/qemu/{vmid}/pending"
	// RouteRRDData is GET /nodes/{node}/qemu/{vmid}/rrddata.
	RouteRRDData = "GET /nodes/{node}/qemu/{vmid}/rrddata"
)

// registerAPI wires every API route to its handler.
func (e *Emulator) registerAPI() {
	e.handle(RouteVersion, e.getVersion)
	e.handle(RouteClusterResources, e.getClusterResources)
	e.handle(RouteNextID, e.getNextID)
	e.handle(RouteNodes, e.getNodes)
	e.handle(RouteNodeStatus, e.getNodeStatus)
	e.handle(RouteStorageList, e.getStorageList)
	e.handle(RouteStorageStatus, e.getStorageStatus)
	e.handle(RouteNetworkList, e.getNetworkList)
	e.handle(RouteQemuList, e.getQemuList)
	e.handle(RouteClone, e.postClone)
	e.handle(RouteConfigGet, e.getConfig)
	e.handle(RouteConfigPost, e.postConfig)
	e.handle(RouteConfigPut, e.putConfig)
	e.handle(RouteResize, e.putResize)
	e.handle(RouteStatusCurrent, e.getStatusCurrent)
	e.handle(RouteStart, e.powerAction("start"))
	e.handle(RouteStop, e.powerAction("stop"))
	e.handle(RouteShutdown, e.powerAction("shutdown"))
	e.handle(RouteReset, e.powerAction("reset"))
	e.handle(RouteReboot, e.powerAction("reboot"))
	e.handle(RouteDestroy, e.deleteVM)
	e.handle(RouteNodeTasks, e.getNodeTasks)
	e.handle(RouteTaskStatus, e.getTaskStatus)
	e.handle(RouteAgentInterfaces, e.getAgentInterfaces)
	e.handle(RoutePending, e.getPending)
	e.handle(RouteRRDData, e.getRRDData)
	e.mux.HandleFunc(apiPrefix+"/", e.notImplemented)
}
