package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

var applyHelp = cmdHelp{
	usage: "skiff apply -f FILE|DIR|- [-f ...] [-n NS]",
	about: `Create or update objects from YAML or JSON manifests.

Each file may hold many documents separated by "---" lines, or a List with
items; a directory contributes its *.yaml, *.yml and *.json files in name
order; "-" reads standard input. Every document is decoded first, and
nothing is applied when one fails to decode. Objects without a namespace go
to -n (default "default"). For each object the result is printed as
kind/name created, configured (changed) or unchanged.`,
	examples: `  skiff apply -f web.yaml
  skiff apply -f manifests/
  cat web.yaml | skiff apply -f -`,
}

// manifestExts are the file name endings apply reads from a directory.
var manifestExts = []string{".yaml", ".yml", ".json"}

// maxManifestSize bounds one manifest file (the API refuses bodies over
// 3 MiB anyway; a file may hold several).
const maxManifestSize = 64 << 20

// manifest is one decoded object and where it came from.
type manifest struct {
	where string // `web.yaml (document 2)`, for messages
	obj   api.Object
}

func runApply(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("apply")
	var f clientFlags
	var files stringList
	f.register(fs, true)
	fs.Var(&files, "filename", "manifest file, directory or - for stdin (repeatable)")
	fs.Var(&files, "f", "shorthand for --filename")
	pos, err := parseArgs(env, fs, applyHelp, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("unexpected arguments %q; give manifests with -f\nSee 'skiff apply -h'.", pos)}
	}
	if len(files) == 0 {
		return usageError{"must specify -f FILE (a file, a directory or - for stdin)\nSee 'skiff apply -h'."}
	}
	var docs []manifest
	var decodeErrs []error
	for _, src := range files {
		d, errs := readManifests(env, src)
		docs = append(docs, d...)
		decodeErrs = append(decodeErrs, errs...)
	}
	for i := range docs {
		if err := setNamespace(docs[i].obj, f.namespace); err != nil {
			decodeErrs = append(decodeErrs, fmt.Errorf("%s: %w", docs[i].where, err))
		}
	}
	if len(decodeErrs) > 0 {
		for _, err := range decodeErrs {
			printError(env, err)
		}
		fmt.Fprintln(env.stderr, "error: nothing was applied")
		return errReported
	}
	if len(docs) == 0 {
		return errors.New("no objects passed to apply")
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	failed := false
	for _, d := range docs {
		res, _ := api.ResourceOf(d.obj) // decoded from the registry: always found
		_, action, err := c.ApplyObject(ctx, d.obj)
		if err != nil {
			fmt.Fprintln(env.stderr, applyError(err, d.where))
			failed = true
			continue
		}
		fmt.Fprintf(env.stdout, "%s/%s %s\n", kindName(res), d.obj.GetObjectMeta().Name, action)
	}
	if failed {
		return errReported
	}
	return nil
}

// applyError renders a failed apply of the object from where, as kubectl
// does: `Error from server (NotFound): error when applying "x.yaml": ...`.
func applyError(err error, where string) string {
	var se *api.StatusError
	if !errors.As(err, &se) || se.Status.Reason == api.StatusReasonUnauthorized {
		return formatError(err)
	}
	return fmt.Sprintf("Error from server (%s): error when applying %s: %s", se.Status.Reason, where, se.Status.Message)
}

// setNamespace gives a namespaced obj without a namespace the one of -n
// (or "default"), and refuses one whose namespace contradicts -n.
func setNamespace(obj api.Object, flagNS string) error {
	res, _ := api.ResourceOf(obj)
	if !res.Namespaced {
		return nil
	}
	m := obj.GetObjectMeta()
	switch {
	case m.Namespace == "" && flagNS == "":
		m.Namespace = client.NamespaceDefault
	case m.Namespace == "":
		m.Namespace = flagNS
	case flagNS != "" && m.Namespace != flagNS:
		return fmt.Errorf("the namespace from the provided object %q does not match the namespace %q; pass --namespace=%s to apply it", m.Namespace, flagNS, m.Namespace)
	}
	return nil
}

// readManifests reads and decodes the documents of src: a file, a
// directory of manifests, or "-" for stdin. It returns every object that
// decoded and an error naming the source and document of each that did not.
func readManifests(env *cliEnv, src string) ([]manifest, []error) {
	if src == "-" {
		data, err := io.ReadAll(io.LimitReader(env.stdin, maxManifestSize+1))
		if err != nil {
			return nil, []error{fmt.Errorf("read stdin: %w", err)}
		}
		return decodeManifests("STDIN", data)
	}
	st, err := os.Stat(src)
	if err != nil {
		return nil, []error{fmt.Errorf("read manifest: %w", err)}
	}
	if !st.IsDir() {
		return readManifestFile(src)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, []error{fmt.Errorf("read manifest directory: %w", err)}
	}
	var docs []manifest
	var errs []error
	for _, e := range entries { // ReadDir sorts by name
		if e.IsDir() || !slices.Contains(manifestExts, strings.ToLower(filepath.Ext(e.Name()))) {
			continue
		}
		d, es := readManifestFile(filepath.Join(src, e.Name()))
		docs = append(docs, d...)
		errs = append(errs, es...)
	}
	if len(docs) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("directory %s holds no *.yaml, *.yml or *.json files", src))
	}
	return docs, errs
}

func readManifestFile(path string) ([]manifest, []error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, []error{fmt.Errorf("read manifest: %w", err)}
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxManifestSize+1))
	if err != nil {
		return nil, []error{fmt.Errorf("read manifest %s: %w", path, err)}
	}
	return decodeManifests(path, data)
}

// decodeManifests splits data into documents and decodes each; a List
// document contributes its items.
func decodeManifests(name string, data []byte) ([]manifest, []error) {
	if len(data) > maxManifestSize {
		return nil, []error{fmt.Errorf("%s: larger than %d bytes", name, maxManifestSize)}
	}
	var docs []manifest
	var errs []error
	for i, doc := range api.SplitYAML(data) {
		where := fmt.Sprintf("%q (document %d)", name, i+1)
		items, isList, err := listItems(doc)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if !isList {
			items = [][]byte{doc}
		}
		for j, item := range items {
			w := where
			if isList {
				w = fmt.Sprintf("%q (document %d, item %d)", name, i+1, j+1)
			}
			obj, err := api.DecodeObject(item)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", w, err))
				continue
			}
			docs = append(docs, manifest{where: w, obj: obj})
		}
	}
	return docs, errs
}

// listItems returns the items of doc when it is a List (kind "List" or
// "<Kind>List"), as JSON documents.
func listItems(doc []byte) (items [][]byte, isList bool, err error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, false, fmt.Errorf("malformed YAML: %s", strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
	}
	var head struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(j, &head); err != nil || !strings.HasSuffix(head.Kind, "List") {
		return nil, false, nil // not a List; DecodeObject reports what is wrong
	}
	for _, it := range head.Items {
		items = append(items, it)
	}
	return items, true, nil
}
