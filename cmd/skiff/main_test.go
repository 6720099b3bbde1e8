package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	code = run(context.Background(), env, args)
	return code, out.String(), errb.String()
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{[]string{"version"}, 0, "skiff version ", ""},
		{[]string{"version", "-o", "json"}, 0, `"goVersion"`, ""},
		{[]string{"version", "-o", "xml"}, 2, "", "unknown output format"},
		{[]string{"bogus"}, 2, "", `unknown command "bogus"`},
		{[]string{"--help"}, 0, "Commands:", ""},
		{nil, 2, "Usage: skiff", ""},
	}
	for _, tt := range tests {
		code, out, errs := runCLI(tt.args...)
		if code != tt.wantCode || !strings.Contains(out, tt.wantStdout) || !strings.Contains(errs, tt.wantStderr) {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d, stdout ~%q, stderr ~%q",
				tt.args, code, out, errs, tt.wantCode, tt.wantStdout, tt.wantStderr)
		}
	}
}
