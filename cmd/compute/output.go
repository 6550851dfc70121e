package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Output formats of -o/--output.
const (
	formatTable = "table" // aligned columns (the default on a terminal)
	formatWide  = "wide"  // the table with more columns
	formatJSON  = "json"  // the reply as the service sent it, indented (the default otherwise)
	formatYAML  = "yaml"  // the reply as YAML, keys as in the JSON
	formatID    = "id"    // the id of each record, one per line (for scripts)
)

// formats lists the -o values, for the flag's help and its check.
var formats = []string{formatTable, formatWide, formatJSON, formatYAML, formatID}

// addOutputFlag registers -o/--output on root (persistent: every command).
func addOutputFlag(root *cobra.Command, g *globals) {
	root.PersistentFlags().StringVarP(&g.output, "output", "o", "",
		"output format: "+strings.Join(formats, ", ")+" (default table on a terminal, json otherwise: scripts keep the JSON reply)")
}

// format is the output format asked for with -o, or table when stdout is a
// terminal and json when it is not (a pipe or a file: scripts read JSON).
// Errors: an -o value that is not a format.
func (g *globals) format() (string, error) {
	switch g.output {
	case "":
		if f, ok := g.out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return formatTable, nil
		}
		return formatJSON, nil
	case formatTable, formatWide, formatJSON, formatYAML, formatID:
		return g.output, nil
	}
	return "", fmt.Errorf("-o %q: want one of %s", g.output, strings.Join(formats, ", "))
}

// showText prints reply, a reply without records (an exec's output, log
// lines, metrics series), in g's format: json and yaml the reply, table and
// wide as text writes it. Errors: -o id (such a reply has no id), and
// text's.
func showText(g *globals, reply any, text func(w io.Writer) error) error {
	format, err := g.format()
	if err != nil {
		return err
	}
	switch format {
	case formatTable, formatWide:
		return text(g.out)
	case formatYAML:
		return printYAML(g.out, reply)
	case formatID:
		return fmt.Errorf("-o id: this reply has no id (json, yaml, table or wide)")
	}
	return g.print(reply)
}

// column is one column of a table: its header (upper case, stable: scripts
// may cut by it), whether only -o wide shows it, and its cell of a record.
type column[T any] struct {
	name  string
	wide  bool
	value func(*T) string
}

// view is how records of one kind print: columns for the tables and the
// record's id for -o id.
type view[T any] struct {
	columns []column[T]
	id      func(*T) string
}

// show prints reply, whose records are items, in g's format: json and yaml
// print reply itself (a record, or a page with its nextCursor), the
// tables one row per item, id one id per line. A table of a page with
// more records after it says so on stderr, with the cursor.
func show[T any](g *globals, v view[T], reply any, items []T, nextCursor string) error {
	format, err := g.format()
	if err != nil {
		return err
	}
	switch format {
	case formatJSON:
		return g.print(reply)
	case formatYAML:
		return printYAML(g.out, reply)
	case formatID:
		for i := range items {
			if _, err := fmt.Fprintln(g.out, v.id(&items[i])); err != nil {
				return err
			}
		}
		return nil
	}
	if err := writeTable(g.out, v.columns, items, format == formatWide); err != nil {
		return err
	}
	if nextCursor != "" {
		fmt.Fprintf(os.Stderr, "more after this page: --cursor %s\n", nextCursor)
	}
	return nil
}

// showOne is show of a single record.
func showOne[T any](g *globals, v view[T], item T) error {
	return show(g, v, item, []T{item}, "")
}

// writeTable writes items under the headers of columns (the wide ones
// only when wide), cells separated by at least three spaces; an empty
// cell prints "-" so columns stay countable.
func writeTable[T any](w io.Writer, columns []column[T], items []T, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	var cells []string
	row := func() {
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
		cells = cells[:0]
	}
	for _, c := range columns {
		if wide || !c.wide {
			cells = append(cells, c.name)
		}
	}
	row()
	for i := range items {
		for _, c := range columns {
			if wide || !c.wide {
				cells = append(cells, cell(c.value(&items[i])))
			}
		}
		row()
	}
	return tw.Flush()
}

// cell is s on one line (tabs and newlines would break the table), "-"
// when empty.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

// printYAML writes v as YAML: its JSON encoding (so keys, their order and
// omitted fields are those of -o json) in block style, strings
// double-quoted (JSON's escapes are YAML's), numbers, booleans and null as
// they are.
func printYAML(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := writeYAML(&buf, dec, 0, yamlTop); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// yamlKey matches the keys written without quotes.
var yamlKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// Where writeYAML's value starts.
const (
	yamlTop       = iota // at the start of the document
	yamlAfterKey         // after "key:" on the current line
	yamlAfterDash        // after "-" on the current line
)

// writeYAML writes the next JSON value of dec, its members at indent
// (spaces), starting at where (yamlTop, yamlAfterKey, yamlAfterDash).
func writeYAML(buf *bytes.Buffer, dec *json.Decoder, indent, where int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	pad := strings.Repeat(" ", indent)
	switch tok {
	case json.Delim('{'):
		if !dec.More() {
			_, _ = dec.Token()
			buf.WriteString(" {}\n")
			return nil
		}
		first := true
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key := k.(string)
			if !yamlKey.MatchString(key) {
				key = strconv.Quote(key)
			}
			switch {
			case first && where == yamlAfterDash:
				buf.WriteString(" " + key + ":")
			case first && where == yamlAfterKey:
				buf.WriteString("\n" + pad + key + ":")
			default:
				buf.WriteString(pad + key + ":")
			}
			first = false
			if err := writeYAML(buf, dec, indent+2, yamlAfterKey); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		if !dec.More() {
			_, _ = dec.Token()
			buf.WriteString(" []\n")
			return nil
		}
		if where != yamlTop {
			buf.WriteString("\n")
		}
		for dec.More() {
			buf.WriteString(pad + "-")
			if err := writeYAML(buf, dec, indent+2, yamlAfterDash); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	if where != yamlTop {
		buf.WriteString(" ")
	}
	switch t := tok.(type) {
	case string:
		buf.WriteString(strconv.Quote(t))
	case json.Number:
		buf.WriteString(t.String())
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case nil:
		buf.WriteString("null")
	}
	buf.WriteString("\n")
	return nil
}
