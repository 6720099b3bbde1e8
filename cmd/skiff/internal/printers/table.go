package printers

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/table"
)

// TableOptions shapes a `skiff get` table.
type TableOptions struct {
	// Wide adds kubectl's -o wide columns.
	Wide bool
	// AllNamespaces adds a leading NAMESPACE column for namespaced kinds.
	AllNamespaces bool
	// NoHeaders leaves out the header line.
	NoHeaders bool
	// Now is the time ages are measured from; the CLI passes its clock's
	// Now. It must be set: a zero Now makes every age "<invalid>".
	Now time.Time
}

// Column layout of kubectl's table printer (its tabwriter settings): a
// column is as wide as its widest cell plus 3 spaces, and at least 6; the
// last column is not padded.
const (
	colPadding  = 3
	colMinWidth = 6
)

// PrintTable writes objs, all of kind res, as the table kubectl prints
// for `get`: upper-case headers, space-aligned columns. It writes nothing
// for an empty objs (the CLI says "No resources found" itself). An object
// of a type other than res's is an error, and nothing is written.
func PrintTable(w io.Writer, res api.ResourceInfo, objs []api.Object, opts TableOptions) error {
	if len(objs) == 0 {
		return nil
	}
	kp, err := printerFor(res)
	if err != nil {
		return err
	}
	var rows [][]string
	if !opts.NoHeaders {
		rows = append(rows, kp.header(res, opts))
	}
	for _, obj := range objs {
		row, err := kp.rowOf(res, obj, opts)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	var al aligner
	for _, r := range rows {
		al.fit(r)
	}
	var b strings.Builder
	for _, r := range rows {
		al.writeRow(&b, r)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// WatchPrinter prints table rows one object at a time for `skiff get -w`:
// the header with the first row, then a row per call. Column widths only
// grow, as with kubectl's remembered tabwriter widths, so earlier lines
// may be narrower than later ones. It is not safe for concurrent use.
type WatchPrinter struct {
	w       io.Writer
	res     api.ResourceInfo
	kp      kindPrinter
	opts    TableOptions
	al      aligner
	started bool
}

// NewWatchPrinter returns a WatchPrinter for objects of res writing to w.
// opts.Now is ignored: each Print call passes its own now.
func NewWatchPrinter(w io.Writer, res api.ResourceInfo, opts TableOptions) (*WatchPrinter, error) {
	kp, err := printerFor(res)
	if err != nil {
		return nil, err
	}
	return &WatchPrinter{w: w, res: res, kp: kp, opts: opts}, nil
}

// Print writes obj's row, measured against now, preceded on the first
// call by the header unless NoHeaders is set.
func (p *WatchPrinter) Print(obj api.Object, now time.Time) error {
	opts := p.opts
	opts.Now = now
	row, err := p.kp.rowOf(p.res, obj, opts)
	if err != nil {
		return err
	}
	var b strings.Builder
	if !p.started && !opts.NoHeaders {
		h := p.kp.header(p.res, opts)
		p.al.fit(h)
		p.al.fit(row)
		p.al.writeRow(&b, h)
	} else {
		p.al.fit(row)
	}
	p.started = true
	p.al.writeRow(&b, row)
	_, err = io.WriteString(p.w, b.String())
	return err
}

// aligner pads cells to column widths that only grow.
type aligner struct {
	widths []int
}

// fit widens the columns to hold row; the last cell never counts, as it
// is not padded.
func (a *aligner) fit(row []string) {
	for i := 0; i < len(row)-1; i++ {
		w := utf8.RuneCountInString(row[i]) + colPadding
		w = max(w, colMinWidth)
		if i >= len(a.widths) {
			a.widths = append(a.widths, w)
		} else if w > a.widths[i] {
			a.widths[i] = w
		}
	}
}

func (a *aligner) writeRow(b *strings.Builder, row []string) {
	for i, cell := range row {
		b.WriteString(cell)
		if i == len(row)-1 {
			break
		}
		if pad := a.widths[i] - utf8.RuneCountInString(cell); pad > 0 {
			b.WriteString(strings.Repeat(" ", pad))
		}
	}
	b.WriteByte('\n')
}

// kindPrinter is one kind's table layout, shared with the API server's
// Tables through package table.
type kindPrinter struct {
	columns []api.TableColumnDefinition
}

// header is the upper-cased names of the columns opts shows, as kubectl
// prints them.
func (kp kindPrinter) header(res api.ResourceInfo, opts TableOptions) []string {
	var h []string
	if opts.AllNamespaces && res.Namespaced {
		h = append(h, "NAMESPACE")
	}
	for _, c := range kp.columns {
		if shown(c, opts) {
			h = append(h, strings.ToUpper(c.Name))
		}
	}
	return h
}

// shown reports whether column c is printed: priority 0 always, the rest
// with -o wide.
func shown(c api.TableColumnDefinition, opts TableOptions) bool {
	return c.Priority == 0 || opts.Wide
}

func (kp kindPrinter) rowOf(res api.ResourceInfo, obj api.Object, opts TableOptions) ([]string, error) {
	if obj == nil {
		return nil, fmt.Errorf("print %s: nil object", res.Resource)
	}
	if r, ok := api.ResourceOf(obj); !ok || r.Kind != res.Kind {
		return nil, fmt.Errorf("print table: got %T, want a %s", obj, res.Kind)
	}
	row, err := table.Row(obj, opts.Now)
	if err != nil {
		return nil, fmt.Errorf("print %s: %w", res.Resource, err)
	}
	var cells []string
	if opts.AllNamespaces && res.Namespaced {
		cells = append(cells, obj.GetObjectMeta().Namespace)
	}
	for i, c := range kp.columns {
		if shown(c, opts) && i < len(row.Cells) {
			cells = append(cells, cellString(row.Cells[i]))
		}
	}
	return cells, nil
}

// cellString prints a cell as kubectl does: strings up to their first
// line break (then "..."), other values with fmt.
func cellString(cell any) string {
	s, ok := cell.(string)
	if !ok {
		return fmt.Sprint(cell)
	}
	if i := strings.IndexAny(s, "\f\n\r"); i >= 0 {
		return s[:i] + "..."
	}
	return s
}

// printerFor returns the table layout of res.
func printerFor(res api.ResourceInfo) (kindPrinter, error) {
	cols, ok := table.Columns(res.Kind)
	if !ok {
		return kindPrinter{}, fmt.Errorf("no table layout for %q", res.Resource)
	}
	return kindPrinter{columns: cols}, nil
}
