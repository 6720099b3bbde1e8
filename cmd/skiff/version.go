package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/skiffhq/skiff/internal/version"
)

func runVersion(_ context.Context, env *cliEnv, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	output := fs.String("o", "", "output format: json")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	v := version.Get()
	switch *output {
	case "":
		fmt.Fprintf(env.stdout, "skiff version %s\ncommit: %s\ngo: %s\nplatform: %s\n", v.Version, v.Commit, v.GoVersion, v.Platform)
	case "json":
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(env.stdout, "%s\n", b)
	default:
		return usageError{fmt.Sprintf("unknown output format %q (want json)", *output)}
	}
	return nil
}
