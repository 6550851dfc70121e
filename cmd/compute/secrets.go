package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

func secretsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "secrets", Short: "Store credentials and get secret references"}
	var fromEnv, key string
	put := &cobra.Command{
		Use:   "put NAME",
		Short: "Store a value read from standard input (or --from-env VAR) and print its secret reference",
		Long: "Reads the value from standard input (trailing newline removed) or from the environment\n" +
			"variable named by --from-env, so it never appears in shell history or the process list.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			value, err := readSecretValue(cmd.InOrStdin(), fromEnv)
			if err != nil {
				return err
			}
			return g.request(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: args[0], Value: value, IdempotencyKey: key}, nil)
		},
	}
	put.Flags().StringVar(&fromEnv, "from-env", "", "read the value from this environment variable")
	put.Flags().StringVar(&key, "idempotency-key", "", "a repeated put with this key and value answers the same reference")
	c.AddCommand(put, listCmd(g, bus.ResourceSecrets), idCmd(g, bus.ResourceSecrets, "delete", "Delete a secret (refused while an account uses it)"))
	return c
}

// readSecretValue reads a value from env var name, or from r (one value; a
// trailing newline is dropped). Errors: the variable is unset, or the value is empty.
func readSecretValue(r io.Reader, name string) (string, error) {
	if name != "" {
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		return v, nil
	}
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return "", err
	}
	v := strings.TrimRight(string(data), "\r\n")
	if v == "" {
		return "", fmt.Errorf("no value on standard input (pipe it in, or use --from-env)")
	}
	return v, nil
}

// listCmd is `<resource> list` with paging flags.
func listCmd(g *globals, resource string) *cobra.Command {
	var req api.ListRequest
	c := &cobra.Command{
		Use:   "list",
		Short: "List " + resource + " (one page; pass --cursor for the next)",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return g.request(resource, "list", req, nil) },
	}
	c.Flags().IntVar(&req.Limit, "limit", 0, "page size (default 100, max 1000)")
	c.Flags().StringVar(&req.Cursor, "cursor", "", "nextCursor of the previous page")
	return c
}

// idCmd is a verb that takes one id: get, delete.
func idCmd(g *globals, resource, verb, short string) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.request(resource, verb, api.IDRequest{ID: args[0]}, nil)
		},
	}
}
