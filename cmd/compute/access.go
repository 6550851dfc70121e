package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
)

// accessCmds are the machine-access verbs of `compute instances`: exec
// and logs (instances.exec, instances.logs).
func accessCmds(g *globals) []*cobra.Command {
	var timeout time.Duration
	exec := &cobra.Command{
		Use:   "exec ID|NAME -- COMMAND...",
		Short: "Run a command on a running instance's machine over SSH (pools with access)",
		Long: "Runs the command (its words joined by spaces) on the machine with the pool's SSH user and key,\n" +
			"and prints the exit code, stdout and stderr (the last 64 KiB of each; truncated says whether\n" +
			"either was cut, timedOut whether --command-timeout ended it). compute exits with the command's\n" +
			"exit code, as ssh does; 124 (as timeout(1)) when --command-timeout ended it.",
		Example: `  compute instances exec inst_01… -- systemctl is-active k3s`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			req := api.InstanceExecRequest{Command: strings.Join(args[1:], " "), TimeoutMs: timeout.Milliseconds()}
			g.timeout = max(g.timeout, timeout+10*time.Second) // the reply comes after the command
			return g.onInstance(args[0], func(ctx context.Context, c *client.Client, id string) error {
				req.ID = id
				reply, err := c.Instances.Exec(ctx, req)
				if err != nil {
					return err
				}
				if err := showText(g, reply, func(w io.Writer) error { return writeExec(w, reply) }); err != nil {
					return err
				}
				if status := execStatus(reply); status != 0 {
					return &exitError{status: status}
				}
				return nil
			})
		},
	}
	exec.Flags().DurationVar(&timeout, "command-timeout", api.DefaultExecTimeout, "end the command after this long (at most 5m)")

	var lreq api.InstanceLogsRequest
	logs := &cobra.Command{
		Use:     "logs ID|NAME",
		Short:   "Show the last lines of a running instance's cloud-init output, journal or console (over SSH)",
		Example: `  compute instances logs inst_01… --source cloud-init --lines 50`,
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.onInstance(args[0], func(ctx context.Context, c *client.Client, id string) error {
				lreq.ID = id
				reply, err := c.Instances.Logs(ctx, lreq)
				if err != nil {
					return err
				}
				return showText(g, reply, func(w io.Writer) error { return writeLogs(w, reply) })
			})
		},
	}
	logs.Flags().StringVar(&lreq.Source, "source", api.LogSourceCloudInit, "cloud-init, journal or console")
	logs.Flags().IntVar(&lreq.Lines, "lines", api.DefaultLogLines, "how many of the last lines (at most 5000)")
	return []*cobra.Command{exec, logs}
}

// Exit statuses of `compute instances exec` other than the command's own.
const (
	execStatusTimedOut = 124 // --command-timeout ended the command, as timeout(1)
	execStatusOther    = 255 // an exit code outside 1..255 (a signal), as ssh
)

// execStatus is the exit status `compute instances exec` ends with after
// printing r: the remote command's exit code (as ssh), execStatusTimedOut
// when the timeout ended it, execStatusOther for a code outside 0..255.
func execStatus(r api.InstanceExecReply) int {
	switch {
	case r.TimedOut:
		return execStatusTimedOut
	case r.ExitCode < 0 || r.ExitCode > 255:
		return execStatusOther
	}
	return r.ExitCode
}

// writeExec prints an exec's reply for a person: the exit code (and
// whether the output was cut or the command timed out), then its stdout
// and stderr as they are, each under a header line.
func writeExec(w io.Writer, r api.InstanceExecReply) error {
	var notes []string
	if r.Truncated {
		notes = append(notes, fmt.Sprintf("output cut to its last %d KiB", api.ExecOutputBytes>>10))
	}
	if r.TimedOut {
		notes = append(notes, "timed out")
	}
	head := fmt.Sprintf("exit code %d", r.ExitCode)
	if len(notes) > 0 {
		head += " (" + strings.Join(notes, ", ") + ")"
	}
	_, err := fmt.Fprintf(w, "%s\n--- stdout\n%s%s--- stderr\n%s%s", head,
		r.Stdout, newlineIfMissing(r.Stdout), r.Stderr, newlineIfMissing(r.Stderr))
	return err
}

// writeLogs prints log lines one per line, and a last line saying so
// when the output was cut to its last api.ExecOutputBytes.
func writeLogs(w io.Writer, r api.InstanceLogsReply) error {
	for _, l := range r.Lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	if r.Truncated {
		_, err := fmt.Fprintf(w, "(%s cut to its last %d KiB: older lines left out)\n", r.Source, api.ExecOutputBytes>>10)
		return err
	}
	return nil
}

// newlineIfMissing is "\n" when s is not empty and does not end with one.
func newlineIfMissing(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return ""
	}
	return "\n"
}

// accessFileFlag adds --access-file to pools create: a JSON file of the
// pool's access (api.PoolAccess: user, privateKey as a secret reference,
// port, configure and drain steps), read into req.Access before the
// request is sent. Unknown fields are refused, naming the file.
func accessFileFlag(create *cobra.Command, req *api.PoolCreateRequest) {
	var file string
	create.Flags().StringVar(&file, "access-file", "",
		`JSON file of the pool's SSH access, e.g. {"user":"root","privateKey":"secret://…","configure":{"hook":"bootstrap"}}`)
	create.PreRunE = func(*cobra.Command, []string) error {
		if file == "" {
			return nil
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		req.Access = &api.PoolAccess{}
		if err := dec.Decode(req.Access); err != nil {
			return fmt.Errorf("--access-file %s: %w", file, err)
		}
		return nil
	}
}
