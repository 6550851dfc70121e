package emulator

// getTaskStatus serves GET /nodes/{node}/tasks/{upid}/status. Due tasks
// were completed before the handler ran, so the reply is current.
func (e *Emulator) getTaskStatus(c *call) (any, *apiError) {
	s := c.r.PathValue("upid")
	if _, err := parseUPID(s); err != nil {
		return nil, errParam("upid", err.Error())
	}
	t, ok := e.tasks[s]
	if !ok || t.id.node != c.node.Name {
		// Guess: the wording for a well-formed UPID that is not known.
		return nil, errInternal("no such task '%s'", s)
	}
	return t.statusView(), nil
}
