package auth_test

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/server/auth"
)

var (
	goodID     = "abc123"
	goodSecret = "abcdefghijklmnopqrstuvwxyz234567"
)

func TestParseJoinToken(t *testing.T) {
	good := "SKF1." + caHash + "." + goodID + "." + goodSecret
	tests := []struct {
		in      string
		wantErr string // substring; "" for success
	}{
		{good, ""},
		{"  " + good + "\n", ""},
		{"", "want SKF1."},
		{"SKF2." + caHash + "." + goodID + "." + goodSecret, "want SKF1."},
		{"SKF1." + caHash + "." + goodID, "want SKF1."},
		{good + ".x", "want SKF1."},
		{"SKF1." + strings.ToUpper(caHash) + "." + goodID + "." + goodSecret, "CA hash"},
		{"SKF1." + caHash[:63] + "." + goodID + "." + goodSecret, "CA hash"},
		{"SKF1." + caHash + ".abc12." + goodSecret, "id"},
		{"SKF1." + caHash + ".ABC123." + goodSecret, "id"},
		{"SKF1." + caHash + ".abc-12." + goodSecret, "id"},
		{"SKF1." + caHash + "." + goodID + "." + goodSecret[:31], "secret"},
		{"SKF1." + caHash + "." + goodID + "." + goodSecret[:31] + "1", "secret"},
		{"SKF1." + caHash + "." + goodID + "." + strings.ToUpper(goodSecret), "secret"},
	}
	// A token carrying a server list for agents (a fifth field) is the
	// same token to the server.
	listed := good + ".aHR0cHM6Ly9hOjc0NDM" // https://a:7443
	if got, err := auth.ParseJoinToken(listed); err != nil || got.String() != good {
		t.Errorf("ParseJoinToken(%q) = %v, %v; want the four-field token %q", listed, got, err, good)
	}
	for _, tt := range tests {
		got, err := auth.ParseJoinToken(tt.in)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("ParseJoinToken(%q) = %v; want nil", tt.in, err)
			} else if got.String() != strings.TrimSpace(tt.in) {
				t.Errorf("ParseJoinToken(%q).String() = %q; want the input", tt.in, got.String())
			}
			continue
		}
		if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ParseJoinToken(%q) = %v; want ErrInvalidToken mentioning %q", tt.in, err, tt.wantErr)
		}
		noSecretIn(t, fmt.Sprintf("ParseJoinToken(%q)", tt.in), err, goodSecret, goodSecret[:31], strings.ToUpper(goodSecret))
	}
}

func TestNewJoinToken(t *testing.T) {
	shape := regexp.MustCompile(`^SKF1\.[0-9a-f]{64}\.[a-z0-9]{6}\.[a-z2-7]{32}$`)
	seen := map[string]bool{}
	for range 100 {
		jt, err := auth.NewJoinToken(caHash)
		if err != nil {
			t.Fatal(err)
		}
		s := jt.String()
		if !shape.MatchString(s) {
			t.Fatalf("NewJoinToken().String() = %q; want shape %s", s, shape)
		}
		back, err := auth.ParseJoinToken(s)
		if err != nil || back != jt {
			t.Fatalf("ParseJoinToken(String()) = %+v, %v; want %+v", back, err, jt)
		}
		if seen[jt.ID] || seen[jt.Secret] {
			t.Fatalf("NewJoinToken repeated an id or secret")
		}
		seen[jt.ID], seen[jt.Secret] = true, true
	}
	if _, err := auth.NewJoinToken("not-a-hash"); err == nil {
		t.Error(`NewJoinToken("not-a-hash") = nil error; want an error`)
	}
}

func TestJoinTokenLogValueRedacts(t *testing.T) {
	jt, err := auth.NewJoinToken(caHash)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("made", "token", jt)
	if strings.Contains(b.String(), jt.Secret) || !strings.Contains(b.String(), jt.ID) {
		t.Errorf("slog output %q; want the id and not the secret", b.String())
	}
}

func TestHashSecret(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	}
	for _, tt := range tests {
		if got := auth.HashSecret(tt.in); got != tt.want {
			t.Errorf("HashSecret(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
