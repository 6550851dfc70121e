// Command compute runs the control plane (`compute up`, `compute serve`,
// `compute emulator`) and talks to it (`compute secrets|accounts|pools|
// instances …`, `compute certify`). Every client verb is one NATS request on
// compute.v1.<tenant>.<resource>.<verb>; replies are printed as JSON.
package main

import (
	"errors"
	"fmt"
	"os"

	"better-compute.io/compute/pkg/api"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		printError(err)
		os.Exit(1)
	}
}

// printError writes a ComputeError as "error: CODE: message (field: path)".
func printError(err error) {
	var ce *api.ComputeError
	if errors.As(err, &ce) {
		msg := "error: " + ce.Error()
		if p := ce.Path(); p != "" {
			msg += " (field: " + p + ")"
		}
		fmt.Fprintln(os.Stderr, msg)
		return
	}
	fmt.Fprintln(os.Stderr, "error:", err)
}
