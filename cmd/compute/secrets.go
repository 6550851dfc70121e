package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/services/secrets"
)

func secretsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "secrets", Short: "Store credentials and get secret references"}
	var fromEnv, key string
	put := &cobra.Command{
		Use:   "put NAME",
		Short: "Store a value read from standard input (or --from-env VAR) and print its secret reference",
		Long: "Reads the value from standard input (trailing newline removed; on a terminal it prompts for\n" +
			"the value and does not echo it) or from the environment variable named by --from-env, so it\n" +
			"never appears in shell history, on the screen or in the process list.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			value, err := readSecretValue(cmd.InOrStdin(), fromEnv, args[0])
			if err != nil {
				return err
			}
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				s, err := c.Secrets.Put(ctx, api.SecretPutRequest{Name: args[0], Value: value, IdempotencyKey: key})
				if err != nil {
					return err
				}
				return showOne(g, secretView, s)
			})
		},
	}
	put.Flags().StringVar(&fromEnv, "from-env", "", "read the value from this environment variable")
	put.Flags().StringVar(&key, "idempotency-key", "", "a repeated put with this key and value answers the same reference")

	var req api.ListRequest
	list := listCommand(g, &req, "secrets", func(ctx context.Context, c *client.Client) error {
		page, err := c.Secrets.List(ctx, req)
		if err != nil {
			return err
		}
		return show(g, secretView, page, page.Items, page.NextCursor)
	})
	del := &cobra.Command{
		Use:   "delete ID|NAME",
		Short: "Delete a secret (refused while an account uses it)",
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withClient(func(ctx context.Context, c *client.Client) error {
				id, err := c.Secrets.Resolve(ctx, args[0])
				if err != nil {
					return err
				}
				d, err := c.Secrets.Delete(ctx, id)
				if err != nil {
					return err
				}
				return showOne(g, deletedView, d)
			})
		},
	}
	c.AddCommand(put, list, del, rekeyCmd(g))
	return c
}

// rekeyCmd is `secrets rekey`: one pass of batches on
// compute.internal.secrets.rekey (admin only), printing the pass's report.
func rekeyCmd(g *globals) *cobra.Command {
	var batch int
	c := &cobra.Command{
		Use:   "rekey",
		Short: "Re-seal every stored secret with the current seal key (admin; services keep serving)",
		Long: "Asks the secrets service to re-seal every stored value with its current seal key (the last\n" +
			"line of the key file), in batches that each fit --timeout, while it keeps serving. When no\n" +
			"value is sealed with an older key any more, those keys are retired (listed under \"retired\")\n" +
			"and may be removed from the key file. Run it again after a failure: it continues safely.\n" +
			"Needs a NATS user allowed to publish " + secrets.RekeySubject + " (the admin user).",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			nc, err := g.connect()
			if err != nil {
				return err
			}
			defer nc.Close()
			var pass secrets.RekeyReply
			for {
				ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
				var out secrets.RekeyReply
				err := bus.Call(ctx, nc, secrets.RekeySubject, secrets.RekeyRequest{Cursor: pass.NextCursor, Limit: batch}, &out)
				cancel()
				if err != nil {
					return err
				}
				pass.Merge(out)
				if pass.NextCursor == "" {
					return showOne(g, rekeyView, pass)
				}
			}
		},
	}
	c.Flags().IntVar(&batch, "batch", 0, "records per request (default: as many as --timeout allows)")
	return c
}

// rekeyView is the table of a rekey pass's report.
var rekeyView = view[secrets.RekeyReply]{
	id: func(r *secrets.RekeyReply) string { return r.KeyID },
	columns: []column[secrets.RekeyReply]{
		{name: "KEY", value: func(r *secrets.RekeyReply) string { return r.KeyID }},
		{name: "VISITED", value: func(r *secrets.RekeyReply) string { return strconv.Itoa(r.Visited) }},
		{name: "RESEALED", value: func(r *secrets.RekeyReply) string { return strconv.Itoa(r.Resealed) }},
		{name: "CURRENT", value: func(r *secrets.RekeyReply) string { return strconv.Itoa(r.Current) }},
		{name: "VANISHED", value: func(r *secrets.RekeyReply) string { return strconv.Itoa(r.Vanished) }},
		{name: "FAILED", value: func(r *secrets.RekeyReply) string { return strings.Join(r.Failed, ",") }},
		{name: "REMAINING", value: func(r *secrets.RekeyReply) string { return strconv.Itoa(r.Remaining) }},
		{name: "RETIRED", value: func(r *secrets.RekeyReply) string { return strings.Join(r.Retired, ",") }},
	},
}

// readSecretValue reads a value from env var name, or from r: a terminal
// is prompted (on stderr, naming secret) and does not echo; anything else
// is read to its end (one value). A trailing newline is dropped. Errors:
// the variable is unset, or the value is empty.
func readSecretValue(r io.Reader, name, secret string) (string, error) {
	if name != "" {
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		return v, nil
	}
	var data []byte
	var err error
	if f, ok := r.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(os.Stderr, "Value of secret %s (not echoed): ", secret)
		data, err = term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(os.Stderr)
	} else {
		data, err = io.ReadAll(io.LimitReader(r, 1<<20))
	}
	if err != nil {
		return "", err
	}
	v := strings.TrimRight(string(data), "\r\n")
	if v == "" {
		return "", fmt.Errorf("no value on standard input (pipe it in, type it at the prompt, or use --from-env)")
	}
	return v, nil
}

// listCommand is `<resource> list` with the paging flags into req,
// running run with a client (g.withClient).
func listCommand(g *globals, req *api.ListRequest, resource string, run func(ctx context.Context, c *client.Client) error) *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List " + resource + " (one page; pass --cursor for the next)",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return g.withClient(run) },
	}
	c.Flags().IntVar(&req.Limit, "limit", 0, "page size (default 100, max 1000)")
	c.Flags().StringVar(&req.Cursor, "cursor", "", "nextCursor of the previous page")
	return c
}
