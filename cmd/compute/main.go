// Command compute runs the control plane (`compute up`, `compute serve`,
// `compute emulator`) and talks to it (`compute secrets|accounts|pools|
// instances|providers …`, `compute certify`). Every client verb is one NATS
// request on compute.v1.<tenant>.<resource>.<verb>, sent through the client
// package; replies print as tables on a terminal and as JSON otherwise (-o
// table|wide|json|yaml|id; docs/user-guide.md, "The CLI's output").
package main

import (
	"errors"
	"fmt"
	"os"

	"better-compute.io/compute/pkg/api"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		os.Exit(printError(err))
	}
}

// exitError ends the command with its own exit status and message (printed
// as it is, without "error: "; "" prints nothing).
type exitError struct {
	status int
	msg    string
}

func (e *exitError) Error() string { return e.msg }

// printError writes a ComputeError as "error: CODE: message (field: path)",
// any other error as "error: message", an exitError as its message
// (nothing for an empty one), and returns the exit status: 1, or the
// exitError's.
func printError(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, ee.msg)
		}
		return ee.status
	}
	var ce *api.ComputeError
	if errors.As(err, &ce) {
		msg := "error: " + ce.Error()
		if p := ce.Path(); p != "" {
			msg += " (field: " + p + ")"
		}
		fmt.Fprintln(os.Stderr, msg)
		return 1
	}
	fmt.Fprintln(os.Stderr, "error:", err)
	return 1
}
