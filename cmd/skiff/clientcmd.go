package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

// Environment variables the client commands read besides $SKIFF_CONFIG.
const (
	envServer = "SKIFF_SERVER"
	envToken  = "SKIFF_TOKEN"
)

// clientFlags are the flags every client command shares: where the server
// is and which namespace to use.
type clientFlags struct {
	configPath string
	server     string
	token      string
	namespace  string
}

// register adds the shared flags to fs. namespaced commands also get
// -n/--namespace.
func (f *clientFlags) register(fs *flag.FlagSet, namespaced bool) {
	fs.StringVar(&f.configPath, "client-config", "", "client config file (default: $SKIFF_CONFIG, ~/.skiff/config.yaml, /var/lib/skiff/server/skiff.yaml)")
	fs.StringVar(&f.server, "server", "", "server URL, overriding the client config's ($SKIFF_SERVER)")
	fs.StringVar(&f.token, "token", "", "bearer token, overriding the client config's ($SKIFF_TOKEN)")
	if namespaced {
		fs.StringVar(&f.namespace, "namespace", "", "namespace (default \"default\")")
		fs.StringVar(&f.namespace, "n", "", "shorthand for --namespace")
	}
}

// ns returns the namespace to use: -n, or "default".
func (f *clientFlags) ns() string {
	if f.namespace == "" {
		return client.NamespaceDefault
	}
	return f.namespace
}

// config finds and loads the client config, then applies --server and
// --token (or their environment variables) over it.
func (f *clientFlags) config(env *cliEnv) (client.Config, error) {
	paths := client.ResolveConfigPath(f.configPath, env.getenv, env.getenv("HOME"))
	cfg, _, err := client.LoadFirstConfig(paths)
	if err != nil {
		return client.Config{}, err
	}
	if s := firstNonEmpty(f.server, env.getenv(envServer)); s != "" {
		cfg.Server = strings.TrimRight(s, "/")
	}
	if t := firstNonEmpty(f.token, env.getenv(envToken)); t != "" {
		cfg.Token = t
	}
	if err := cfg.Validate(); err != nil {
		return client.Config{}, err
	}
	return cfg, nil
}

// client returns a Client for the loaded config.
func (f *clientFlags) client(env *cliEnv) (*client.Client, client.Config, error) {
	cfg, err := f.config(env)
	if err != nil {
		return nil, client.Config{}, err
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, client.Config{}, err
	}
	return c, cfg, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// cmdHelp is the help text of one command, printed for -h.
type cmdHelp struct {
	usage    string // "skiff get KIND [NAME...] [flags]"
	about    string // a paragraph
	examples string // indented lines, may be ""
}

// newFlagSet returns a flag set that prints nothing itself: parse errors
// come back as errors and -h as flag.ErrHelp.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses args into fs, allowing flags between the positional
// arguments as kubectl does ("get pods -n kube-system"). Arguments after
// "--" are positional. It returns the positional arguments; for -h it
// prints help to stdout and returns errHelp.
func parseArgs(env *cliEnv, fs *flag.FlagSet, h cmdHelp, args []string) ([]string, error) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printHelp(env.stdout, fs, h)
				return nil, errHelp
			}
			return nil, usageError{fmt.Sprintf("%v\nSee 'skiff %s -h'.", err, fs.Name())}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return append(pos, tail...), nil
}

// printHelp writes h and fs's flags.
func printHelp(w io.Writer, fs *flag.FlagSet, h cmdHelp) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n  %s\n", h.about, h.usage)
	if h.examples != "" {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", strings.TrimRight(h.examples, "\n"))
	}
	b.WriteString("\nFlags:\n")
	io.WriteString(w, b.String())
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// errReported is returned by a command that has printed its errors
// itself; run exits 1 without printing more.
var errReported = errors.New("errors reported")

// formatError renders err as kubectl does: server answers as
// "Error from server (Reason): message", anything else as "error: ...".
func formatError(err error) string {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return "error: " + err.Error()
	}
	st := se.Status
	switch {
	case st.Code == http.StatusUnauthorized || st.Reason == api.StatusReasonUnauthorized:
		return fmt.Sprintf("error: You must be logged in to the server (%s)", st.Message)
	case st.Reason == api.StatusReasonInvalid:
		return "The " + st.Message
	case st.Reason == "":
		return fmt.Sprintf("Error from server: %s", st.Message)
	}
	return fmt.Sprintf("Error from server (%s): %s", st.Reason, st.Message)
}

// printError writes err to stderr the way run does.
func printError(env *cliEnv, err error) {
	fmt.Fprintln(env.stderr, formatError(err))
}

// lookupKind resolves a kind as the user typed it (pods, pod, po, Pod).
func lookupKind(name string) (api.ResourceInfo, error) {
	res, ok := api.LookupResource(name)
	if !ok {
		return api.ResourceInfo{}, fmt.Errorf("the server doesn't have a resource type %q", name)
	}
	return res, nil
}

// kindName is how kubectl names a resource in messages: "pod",
// "deployment.apps".
func kindName(res api.ResourceInfo) string {
	if res.Group == "" {
		return res.Singular
	}
	return res.Singular + "." + res.Group
}
