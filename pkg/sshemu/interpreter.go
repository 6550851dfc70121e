package sshemu

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Files the interpreter serves its logs as.
var logFiles = map[string]string{
	"/var/log/cloud-init-output.log": LogCloudInit,
	"/var/log/cloud-init.log":        LogCloudInit,
}

// outcome is how a session ended besides its exit status.
type outcome struct{ hang, drop bool }

// interpret runs run.Command and fills run's Script, Env and Exit. The
// command "sh -s [-- ARG…]" runs the script read from standard input
// (until the client closes it) with ARGs as $1…; any other command is a
// one-line script. Lines run in order (blank lines and # comments are
// skipped) until one exits non-zero (as sh -e) or runs exit. $NAME,
// ${NAME} and $1… are expanded from the exported environment and the
// arguments; there is no quoting, no pipes and no redirection.
//
// Commands: a program registered with SetProgram (its Response);
// export NAME=VALUE; echo ARG…; true; false; exit [N]; hostname;
// sleep N (returns at once: the interpreter is deterministic);
// cat FILE and tail -n N FILE for /var/log/cloud-init-output.log (and
// cloud-init.log); journalctl [--no-pager] [-k] [-n N] (the journal, or
// with -k the console). Anything else answers "<cmd>: not found" on
// standard error and exits 127.
func (m *Machine) interpret(run *Run, ch ssh.Channel) outcome {
	run.Env = map[string]string{}
	fields := strings.Fields(run.Command)
	var args []string
	lines := []string{run.Command}
	if len(fields) >= 2 && fields[0] == "sh" && fields[1] == "-s" {
		script, _ := io.ReadAll(ch)
		run.Script = string(script)
		lines = strings.Split(run.Script, "\n")
		if len(fields) > 2 && fields[2] == "--" {
			args = fields[3:]
		}
	}
	run.Exit = 0
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words := strings.Fields(os.Expand(line, func(name string) string {
			if n, err := strconv.Atoi(name); err == nil {
				if n >= 1 && n <= len(args) {
					return args[n-1]
				}
				return ""
			}
			return run.Env[name]
		}))
		if len(words) == 0 {
			continue
		}
		exit, stop, out := m.command(run, words, ch)
		if out.hang || out.drop {
			run.Exit = -1
			return out
		}
		run.Exit = exit
		if stop || exit != 0 {
			break
		}
	}
	return outcome{}
}

// command runs one line's words; stop is set by exit.
func (m *Machine) command(run *Run, words []string, ch ssh.Channel) (exit int, stop bool, out outcome) {
	m.mu.Lock()
	prog, registered := m.programs[words[0]]
	m.mu.Unlock()
	if registered {
		switch {
		case prog.Drop:
			return 0, true, outcome{drop: true}
		case prog.Hang:
			_, _ = io.WriteString(ch, prog.Stdout)
			return 0, true, outcome{hang: true}
		}
		_, _ = io.WriteString(ch, prog.Stdout)
		_, _ = io.WriteString(ch.Stderr(), prog.Stderr)
		return prog.Exit, false, outcome{}
	}
	switch words[0] {
	case "export":
		for _, kv := range words[1:] {
			if k, v, ok := strings.Cut(kv, "="); ok {
				run.Env[k] = v
			}
		}
		return 0, false, outcome{}
	case "echo":
		_, _ = io.WriteString(ch, strings.Join(words[1:], " ")+"\n")
		return 0, false, outcome{}
	case "true", "sleep":
		return 0, false, outcome{}
	case "false":
		return 1, false, outcome{}
	case "exit":
		n := 0
		if len(words) > 1 {
			n, _ = strconv.Atoi(words[1])
		}
		return n, true, outcome{}
	case "hostname":
		_, _ = io.WriteString(ch, m.name+"\n")
		return 0, false, outcome{}
	case "cat", "tail":
		return m.readLog(words, ch), false, outcome{}
	case "journalctl":
		source, n := LogJournal, -1
		for i := 1; i < len(words); i++ {
			switch words[i] {
			case "-k":
				source = LogConsole
			case "-n":
				if i+1 < len(words) {
					n, _ = strconv.Atoi(words[i+1])
					i++
				}
			}
		}
		m.writeLines(ch, source, n)
		return 0, false, outcome{}
	}
	_, _ = fmt.Fprintf(ch.Stderr(), "sh: %s: not found\n", words[0])
	return 127, false, outcome{}
}

// readLog answers cat FILE and tail -n N FILE for the log files.
func (m *Machine) readLog(words []string, ch ssh.Channel) int {
	n := -1
	file := words[len(words)-1]
	if words[0] == "tail" {
		n = 10
		if len(words) == 4 && words[1] == "-n" {
			n, _ = strconv.Atoi(words[2])
		}
	}
	source, ok := logFiles[file]
	if !ok || len(words) < 2 {
		_, _ = fmt.Fprintf(ch.Stderr(), "%s: %s: No such file or directory\n", words[0], file)
		return 1
	}
	m.writeLines(ch, source, n)
	return 0
}

// writeLines writes the last n lines of source (all for n < 0).
func (m *Machine) writeLines(ch ssh.Channel, source string, n int) {
	m.mu.Lock()
	lines := m.logs[source]
	if n >= 0 && n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	m.mu.Unlock()
	_, _ = io.WriteString(ch, b.String())
}
