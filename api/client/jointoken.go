package client

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// A join token may carry the list of servers an agent should use:
//
//	SKF1.<ca hash>.<id>.<secret>              the token the server checks
//	SKF1.<ca hash>.<id>.<secret>.<servers>    the same, with a server list
//
// where <servers> is the comma-joined https URLs in unpadded base64url
// (URLs hold dots; the token's fields are separated by dots). The list is
// neither secret nor authenticated: the CA hash still decides which
// servers the agent trusts, so a wrong list can only make an agent try a
// server that fails the hash check. Tokens without a list keep working.

// MaxJoinTokenServers bounds the servers a join token may carry.
const MaxJoinTokenServers = 16

// SplitJoinToken splits a join token into the four-field token the
// server checks and the server list it carries (nil when none). It checks
// only the list; the token's own fields are the server's to check. Its
// errors never quote the token.
func SplitJoinToken(token string) (core string, servers []string, err error) {
	token = strings.TrimSpace(token)
	parts := strings.Split(token, ".")
	if len(parts) != 5 {
		return token, nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[4])
	if err != nil {
		return "", nil, errors.New("join token: the server list is not base64url")
	}
	servers = Servers(string(raw))
	if err := ValidateJoinTokenServers(servers); err != nil {
		return "", nil, err
	}
	return strings.Join(parts[:4], "."), servers, nil
}

// JoinTokenWithServers returns token (four fields, any list it carried
// dropped) carrying servers; with no servers, token alone.
func JoinTokenWithServers(token string, servers []string) (string, error) {
	core, _, err := SplitJoinToken(token)
	if err != nil {
		return "", err
	}
	if len(servers) == 0 {
		return core, nil
	}
	if err := ValidateJoinTokenServers(servers); err != nil {
		return "", err
	}
	return core + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Join(servers, ","))), nil
}

// ValidateJoinTokenServers checks a server list for a join token: 1 to
// MaxJoinTokenServers https://host[:port] URLs.
func ValidateJoinTokenServers(servers []string) error {
	if len(servers) == 0 {
		return errors.New("join token: the server list is empty")
	}
	if len(servers) > MaxJoinTokenServers {
		return fmt.Errorf("join token: %d servers, at most %d", len(servers), MaxJoinTokenServers)
	}
	for i, s := range servers {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("join token: server %d of its list is not an https://host:port URL", i+1)
		}
	}
	return nil
}

// MergeServers returns first followed by those of more not in it, in
// order: the servers of --server, then those a join token adds.
func MergeServers(first, more []string) []string {
	out := append([]string(nil), first...)
	seen := make(map[string]bool, len(first)+len(more))
	for _, s := range first {
		seen[s] = true
	}
	for _, s := range more {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
