package main

import (
	"io"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
)

// Mistakes a user makes on the command line fail with an error that says
// what is wrong, before anything is sent.
func TestCLIMistakes(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"instances", "lst"}, `unknown command "lst" for "compute instances"; did you mean get or list?`},
		{[]string{"emulator", "aws"}, `unknown command "aws" for "compute emulator"`},
		{[]string{"--tenant", "bad tenant", "instances", "list"}, `--tenant "bad tenant" is not a tenant id`},
		{[]string{"--tenant", "Demo.x", "pools", "list"}, `--tenant "Demo.x" is not a tenant id`},
		{[]string{"--nats", "nats://127.0.0.1:1", "instances", "list"}, "no NATS server answers at nats://127.0.0.1:1"},
	}
	for _, c := range cases {
		root := newRootWith(io.Discard)
		root.SetArgs(c.args)
		root.SetOut(io.Discard)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("compute %s: %v, want an error containing %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	root := newRootWith(io.Discard)
	root.SetArgs([]string{"--tenant", "Bad", "instances", "list"})
	if err := root.Execute(); !api.IsCode(err, api.CodeInvalidInput) || api.AsComputeError(err).Path() != "tenant" {
		t.Errorf("a bad tenant: %v, want INVALID_INPUT naming tenant", err)
	}
}
