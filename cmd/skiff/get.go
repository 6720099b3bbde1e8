package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/cmd/skiff/internal/printers"
)

// Output formats of get (besides the default table).
const (
	outputWide = "wide"
	outputName = "name"
)

var getHelp = cmdHelp{
	usage: "skiff get KIND [NAME...] [-n NS | -A] [-o wide|json|yaml|name] [-l SELECTOR] [--field-selector SELECTOR] [-w]",
	about: `Print objects of one kind as a table, or as JSON or YAML.

KIND is one of nodes, pods, deployments, daemonsets, events, secrets,
configmaps, namespaces, in plural, singular or short form (po, deploy, ds,
ev, cm, ns, no). With -w the table is printed, then a row for every change
until interrupted.`,
	examples: `  skiff get pods
  skiff get pods -A -o wide
  skiff get deploy web -o yaml
  skiff get pods -l app=web --field-selector status.phase=Running
  skiff get pods -w`,
}

// getFlags are the flags of `skiff get`.
type getFlags struct {
	clientFlags
	allNamespaces bool
	output        string
	watch         bool
	labels        string
	fields        string
	noHeaders     bool
}

func (f *getFlags) register(fs *flag.FlagSet) {
	f.clientFlags.register(fs, true)
	fs.BoolVar(&f.allNamespaces, "all-namespaces", false, "list across all namespaces")
	fs.BoolVar(&f.allNamespaces, "A", false, "shorthand for --all-namespaces")
	fs.StringVar(&f.output, "output", "", "output format: wide, json, yaml or name")
	fs.StringVar(&f.output, "o", "", "shorthand for --output")
	fs.BoolVar(&f.watch, "watch", false, "after printing, watch for changes")
	fs.BoolVar(&f.watch, "w", false, "shorthand for --watch")
	fs.StringVar(&f.labels, "selector", "", "label selector, e.g. app=web,tier!=db")
	fs.StringVar(&f.labels, "l", "", "shorthand for --selector")
	fs.StringVar(&f.fields, "field-selector", "", "field selector, e.g. spec.nodeName=node-1")
	fs.BoolVar(&f.noHeaders, "no-headers", false, "leave out the table header")
}

func runGet(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("get")
	var f getFlags
	f.register(fs)
	pos, err := parseArgs(env, fs, getHelp, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{"you must specify the type of resource to get: one of " + kindList() + "\nSee 'skiff get -h'."}
	}
	switch f.output {
	case "", outputWide, outputName, printers.FormatJSON, printers.FormatYAML:
	default:
		return usageError{fmt.Sprintf("unknown output format %q (want wide, json, yaml or name)", f.output)}
	}
	if strings.Contains(pos[0], ",") || strings.EqualFold(pos[0], "all") {
		return getKinds(ctx, env, &f, pos)
	}
	res, err := lookupKind(pos[0])
	if err != nil {
		return err
	}
	names := pos[1:]
	if len(names) > 0 && f.allNamespaces {
		return usageError{"a resource cannot be retrieved by name across all namespaces"}
	}
	if len(names) > 0 && f.labels != "" {
		return usageError{"a name cannot be given together with a label selector"}
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	g := &getter{env: env, c: c, res: res, f: &f}
	if f.watch {
		return g.watch(ctx, names)
	}
	return g.get(ctx, names)
}

// getKinds lists several kinds — "pods,deployments", or "all" (the kinds
// in the "all" category) — one table after another, as kubectl does.
func getKinds(ctx context.Context, env *cliEnv, f *getFlags, pos []string) error {
	if len(pos) > 1 {
		return usageError{"names cannot be given with several resource types (use type/name)"}
	}
	if f.watch {
		return usageError{"watch takes one resource type"}
	}
	if isStructured(f.output) {
		return usageError{"-o json and -o yaml take one resource type"}
	}
	var kinds []api.ResourceInfo
	for _, k := range strings.Split(pos[0], ",") {
		if strings.EqualFold(k, "all") {
			for _, r := range api.Resources() {
				if slices.Contains(r.Categories, "all") {
					kinds = append(kinds, r)
				}
			}
			continue
		}
		res, err := lookupKind(k)
		if err != nil {
			return err
		}
		kinds = append(kinds, res)
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	printed := false
	for _, res := range kinds {
		g := &getter{env: env, c: c, res: res, f: f}
		list, _, err := c.List(ctx, res, g.listNamespace(), g.listOptions())
		if err != nil {
			return err
		}
		if len(list) == 0 {
			continue
		}
		if printed && f.output != outputName {
			fmt.Fprintln(env.stdout)
		}
		if err := g.print(list, false); err != nil {
			return err
		}
		printed = true
	}
	if !printed {
		(&getter{env: env, res: kinds[0], f: f}).noResources()
	}
	return nil
}

// kindList names the kinds get accepts, for error messages.
func kindList() string {
	var names []string
	for _, r := range api.Resources() {
		names = append(names, r.Resource)
	}
	return strings.Join(names, ", ")
}

// getter runs one `skiff get`.
type getter struct {
	env *cliEnv
	c   *client.Client
	res api.ResourceInfo
	f   *getFlags
}

// listNamespace is the namespace a list goes to.
func (g *getter) listNamespace() string {
	if !g.res.Namespaced || g.f.allNamespaces {
		return client.NamespaceAll
	}
	return g.f.ns()
}

func (g *getter) listOptions() client.ListOptions {
	return client.ListOptions{LabelSelector: g.f.labels, FieldSelector: g.f.fields}
}

func (g *getter) tableOptions() printers.TableOptions {
	return printers.TableOptions{
		Wide:          g.f.output == outputWide,
		AllNamespaces: g.f.allNamespaces && g.res.Namespaced,
		NoHeaders:     g.f.noHeaders,
		Now:           g.env.now(),
	}
}

// get prints the named objects, or the list.
func (g *getter) get(ctx context.Context, names []string) error {
	var objs []api.Object
	var failed bool
	if len(names) == 0 {
		list, _, err := g.c.List(ctx, g.res, g.listNamespace(), g.listOptions())
		if err != nil {
			return err
		}
		objs = list
	} else {
		for _, name := range names {
			obj, err := g.c.Get(ctx, g.res, g.f.ns(), name)
			if err != nil {
				printError(g.env, err)
				failed = true
				continue
			}
			objs = append(objs, obj)
		}
	}
	if err := g.print(objs, len(names) == 1); err != nil {
		return err
	}
	if len(objs) == 0 && len(names) == 0 && !isStructured(g.f.output) {
		g.noResources()
	}
	if failed {
		return errReported
	}
	return nil
}

// noResources says on stderr that the list was empty, as kubectl does.
func (g *getter) noResources() {
	if g.res.Namespaced && !g.f.allNamespaces {
		fmt.Fprintf(g.env.stderr, "No resources found in %s namespace.\n", g.f.ns())
		return
	}
	fmt.Fprintln(g.env.stderr, "No resources found")
}

func isStructured(output string) bool {
	return output == printers.FormatJSON || output == printers.FormatYAML
}

// print writes objs in the chosen format; single is true when one object
// was asked for by name, which prints it bare rather than in a List.
func (g *getter) print(objs []api.Object, single bool) error {
	w := g.env.stdout
	switch g.f.output {
	case printers.FormatJSON, printers.FormatYAML:
		if single {
			if len(objs) == 0 {
				return nil
			}
			return printers.PrintObject(w, objs[0], g.f.output)
		}
		return printers.PrintList(w, objs, g.f.output)
	case outputName:
		for _, obj := range objs {
			fmt.Fprintf(w, "%s/%s\n", kindName(g.res), obj.GetObjectMeta().Name)
		}
		return nil
	}
	return printers.PrintTable(w, g.res, objs, g.tableOptions())
}

// watch prints the current objects, then one line (or document) per change
// until ctx is done. It resumes after the list's resourceVersion, re-opens
// a stream the server ends, and relists when the version has been
// compacted away (410 Gone).
func (g *getter) watch(ctx context.Context, names []string) error {
	opts := g.listOptions()
	switch len(names) {
	case 0:
	case 1:
		sel := "metadata.name=" + names[0]
		if opts.FieldSelector != "" {
			sel = opts.FieldSelector + "," + sel
		}
		opts.FieldSelector = sel
	default:
		return usageError{"watch is only supported on one object or on a whole list"}
	}
	ns := g.listNamespace()
	if len(names) == 1 {
		ns = g.f.ns()
		if !g.res.Namespaced {
			ns = client.NamespaceAll
		}
	}
	objs, rv, err := g.c.List(ctx, g.res, ns, opts)
	if err != nil {
		return err
	}
	if len(names) == 1 && len(objs) == 0 {
		return api.NewNotFound(g.res.Resource, names[0])
	}
	emit, err := g.watchEmitter(objs)
	if err != nil {
		return err
	}
	for {
		w, err := g.c.Watch(ctx, g.res, ns, client.WatchOptions{ListOptions: opts, ResourceVersion: rv})
		if err == nil {
			err = g.stream(w, emit)
			rv = w.ResourceVersion()
			w.Close()
		}
		switch {
		case ctx.Err() != nil:
			return nil // interrupted: the normal end of a watch
		case errors.Is(err, io.EOF):
			continue // the server ended the stream; resume from rv
		case client.IsGone(err):
			if objs, rv, err = g.c.List(ctx, g.res, ns, opts); err != nil {
				return err
			}
			for _, obj := range objs {
				if err := emit(obj); err != nil {
					return err
				}
			}
		default:
			return err
		}
	}
}

// stream emits each event of w until w fails.
func (g *getter) stream(w *client.Watcher, emit func(api.Object) error) error {
	for {
		ev, err := w.Next()
		if err != nil {
			return err
		}
		obj, ok := ev.Object.(api.Object)
		if !ok {
			return fmt.Errorf("watch %s: event of type %T", g.res.Resource, ev.Object)
		}
		if err := emit(obj); err != nil {
			return err
		}
	}
}

// watchEmitter prints the initial objects and returns the function that
// prints each later one in the same format. Table rows are aligned with
// the initial table as long as they fit its columns.
func (g *getter) watchEmitter(objs []api.Object) (func(api.Object) error, error) {
	out := g.env.stdout
	switch g.f.output {
	case printers.FormatJSON, printers.FormatYAML:
		n := 0
		emit := func(obj api.Object) error {
			if g.f.output == printers.FormatYAML && n > 0 {
				io.WriteString(out, "---\n")
			}
			n++
			return printers.PrintObject(out, obj, g.f.output)
		}
		for _, obj := range objs {
			if err := emit(obj); err != nil {
				return nil, err
			}
		}
		return emit, nil
	case outputName:
		emit := func(obj api.Object) error {
			_, err := fmt.Fprintf(out, "%s/%s\n", kindName(g.res), obj.GetObjectMeta().Name)
			return err
		}
		for _, obj := range objs {
			if err := emit(obj); err != nil {
				return nil, err
			}
		}
		return emit, nil
	}
	opts := g.tableOptions()
	if len(objs) == 0 {
		g.noResources()
	} else if err := printers.PrintTable(out, g.res, objs, opts); err != nil {
		return nil, err
	}
	// Rows after the table line up with it: the printer first measures
	// the header and the listed rows, writing them nowhere.
	sw := &switchWriter{w: io.Discard}
	p, err := printers.NewWatchPrinter(sw, g.res, opts)
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		if err := p.Print(obj, opts.Now); err != nil {
			return nil, err
		}
	}
	sw.w = out
	return func(obj api.Object) error { return p.Print(obj, g.env.now()) }, nil
}

// switchWriter writes to w, which may be replaced between writes.
type switchWriter struct{ w io.Writer }

// Write implements io.Writer.
func (s *switchWriter) Write(p []byte) (int, error) { return s.w.Write(p) }
